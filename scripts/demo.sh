#!/usr/bin/env bash
# `npm run demo`: bootstrap (dependencies, PostgreSQL, Redis, Prisma client), then the demo
# (scripts/demo.ts), then stop every service the bootstrap had to start.
# The demo drops and recreates its own database, so it never uses DATABASE_URL (that may be
# Paperclip's production database): RECLAIM_DEMO_DATABASE_URL, default
# postgresql://postgres@127.0.0.1:5432/reclaim_demo.
set -euo pipefail
cd "$(dirname "$0")/.."
export DATABASE_URL="${RECLAIM_DEMO_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/reclaim_demo}"
RECLAIM_STARTED_SERVICES="$(mktemp)"
export RECLAIM_STARTED_SERVICES
trap 'bash scripts/stop-services.sh "$RECLAIM_STARTED_SERVICES"; rm -f "$RECLAIM_STARTED_SERVICES"' EXIT
bash scripts/bootstrap.sh
npx --no-install tsx scripts/demo.ts
