/**
 * Prometheus exposition for GET /metrics, computed at scrape time from the sources of truth
 * (BullMQ for queue depth, the ledger, and the running totals every stored report is added
 * to, which outlive pruned reports), so every scheduler replica reports the same numbers and
 * a restart resets nothing. A scrape reads one row per domain, however many reports exist.
 *   reclaim_queue_jobs{domain,state}                     gauge
 *   reclaim_deadlines{domain} / reclaim_next_deadline_timestamp_seconds{domain}   gauges
 *   reclaim_job_duration_seconds{domain}                 histogram of finished batches
 *   reclaim_batches_total{domain,result}                 counter (ok | error)
 *   reclaim_candidates_total, reclaim_removed_total, reclaim_candidate_bytes_total,
 *   reclaim_reclaimed_bytes_total{domain}                counters
 *   reclaim_skips_total{domain,reason}                   counter
 * plus the process's own metrics from prom-client.
 */
import { readReportTotals, REPORT_DURATION_BUCKETS } from "@reclaim/core";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { ApiDeps } from "./deps";

const QUEUE_STATES = ["waiting", "delayed", "active", "completed", "failed"] as const;

type Sample = [labels: Record<string, string>, value: number];

function family(name: string, type: string, help: string, samples: Sample[], suffix = ""): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const [labels, value] of samples) lines.push(`${name}${suffix}${formatLabels(labels)} ${value}`);
  return lines.join("\n");
}

function formatLabels(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`,
  );
  return parts.length ? `{${parts.join(",")}}` : "";
}

export class Metrics {
  private readonly process = new Registry();

  constructor(private readonly deps: ApiDeps) {
    collectDefaultMetrics({ register: this.process, prefix: "reclaim_scheduler_" });
  }

  async render(): Promise<string> {
    const { db, domains, queues } = this.deps;
    const ids = [...domains.keys()];
    const queueSamples: Sample[] = [];
    for (const id of ids) {
      const counts = await queues.queue(id).getJobCounts(...QUEUE_STATES, "prioritized");
      for (const state of QUEUE_STATES) {
        const value = (counts[state] ?? 0) + (state === "waiting" ? (counts.prioritized ?? 0) : 0);
        queueSamples.push([{ domain: id, state }, value]);
      }
    }
    // One row per domain (ledger/report-totals.ts); durationBuckets counts the batches that
    // took at most each bound of REPORT_DURATION_BUCKETS, in order.
    const totals = await readReportTotals(db);
    const ledger = await db.reclaimDeadline.groupBy({
      by: ["domain"],
      _count: { _all: true },
      _min: { dueAt: true },
    });

    const histogram: string[] = [
      "# HELP reclaim_job_duration_seconds Wall time of finished batches",
      "# TYPE reclaim_job_duration_seconds histogram",
    ];
    for (const t of totals) {
      for (const [i, le] of REPORT_DURATION_BUCKETS.entries()) {
        const count = t.durationBuckets[i] ?? 0;
        histogram.push(
          `reclaim_job_duration_seconds_bucket${formatLabels({ domain: t.domain, le: String(le) })} ${count}`,
        );
      }
      histogram.push(
        `reclaim_job_duration_seconds_bucket${formatLabels({ domain: t.domain, le: "+Inf" })} ${t.batches}`,
      );
      histogram.push(
        `reclaim_job_duration_seconds_sum${formatLabels({ domain: t.domain })} ${t.durationSum}`,
      );
      histogram.push(`reclaim_job_duration_seconds_count${formatLabels({ domain: t.domain })} ${t.batches}`);
    }
    const per = (field: "candidates" | "removed" | "candidateBytes" | "reclaimedBytes"): Sample[] =>
      totals.map((t) => [{ domain: t.domain }, Number(t[field])]);

    return (
      [
        family("reclaim_queue_jobs", "gauge", "Jobs in each domain's queue by state", queueSamples),
        family(
          "reclaim_deadlines",
          "gauge",
          "Rows in the deadline ledger",
          ledger.map((l) => [{ domain: l.domain }, l._count._all]),
        ),
        family(
          "reclaim_next_deadline_timestamp_seconds",
          "gauge",
          "Earliest deadline in the ledger (Unix time)",
          ledger.map((l) => [{ domain: l.domain }, (l._min.dueAt?.getTime() ?? 0) / 1000]),
        ),
        histogram.join("\n"),
        family(
          "reclaim_batches_total",
          "counter",
          "Finished batches by result",
          totals.flatMap((t): Sample[] => [
            [{ domain: t.domain, result: "ok" }, Number(t.batches - t.errors)],
            [{ domain: t.domain, result: "error" }, Number(t.errors)],
          ]),
        ),
        family(
          "reclaim_candidates_total",
          "counter",
          "Entries found eligible for removal",
          per("candidates"),
        ),
        family("reclaim_removed_total", "counter", "Entries removed", per("removed")),
        family(
          "reclaim_candidate_bytes_total",
          "counter",
          "Allocated bytes of candidates",
          per("candidateBytes"),
        ),
        family("reclaim_reclaimed_bytes_total", "counter", "Allocated bytes freed", per("reclaimedBytes")),
        family(
          "reclaim_skips_total",
          "counter",
          "Entries kept, by reason",
          totals.flatMap((t) =>
            Object.entries(t.skipped).map(([reason, total]): Sample => [
              { domain: t.domain, reason },
              Number(total),
            ]),
          ),
        ),
        await this.process.metrics(),
      ].join("\n\n") + "\n"
    );
  }
}
