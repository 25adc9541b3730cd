/**
 * The quarantine in the repository shapes Paperclip has (linked worktrees, clones that
 * borrow objects through alternates), the environment it hands to git, and ref updates.
 */
import { execFileSync } from "node:child_process";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ConfigError, QuarantineError, quoteAlternate, withObjectQuarantine } from "../../src";
import { capture } from "./capture";
import { cleanup, fsckStrict, git, gitEnv, indexAndHead, makeRepo, tempDir } from "./git-fixture";
import { makeRepoHandle } from "./repo-handle";
import { rejectionOf } from "../rejection";

afterEach(cleanup);

describe("repository shapes", () => {
  it("publishes into the common object store from a linked worktree, leaving its index and HEAD alone", async () => {
    const main = await makeRepo();
    const wtDir = path.join(path.dirname(main.dir), "wt");
    await main.git(["worktree", "add", "-q", "-b", "wt-branch", wtDir]);
    const wt = makeRepoHandle(wtDir);
    await writeFile(path.join(wtDir, "work.txt"), "work in a linked worktree\n");
    const before = await indexAndHead(wt);
    const { value } = await capture(wt, { ref: "refs/reclaim/wt" });
    const blob = (await main.git(["rev-parse", `${value.commit}:work.txt`])).trim();
    await main.git(["cat-file", "-e", blob]);
    expect(await readdir(path.join(main.objects, blob.slice(0, 2)))).toContain(blob.slice(2));
    expect(await indexAndHead(wt)).toEqual(before);
    await fsckStrict(main);
  });

  it("reads existing objects through the repository's own alternates", async () => {
    const origin = await makeRepo();
    const cloneDir = path.join(await tempDir(), "borrowing");
    await git(os.tmpdir(), ["clone", "-q", "--shared", origin.dir, cloneDir]);
    const clone = makeRepoHandle(cloneDir);
    await clone.git(["config", "core.bigFileThreshold", "64k"]);
    // Nothing of origin's history is in the clone's own store: HEAD is readable only through alternates.
    expect((await readdir(clone.objects)).filter((n) => /^[0-9a-f]{2}$/.test(n))).toEqual([]);
    await writeFile(path.join(cloneDir, "new.txt"), "new in the borrowing clone\n");
    const { value } = await capture(clone, { ref: "refs/reclaim/borrowed" });
    expect((await clone.git(["cat-file", "-p", `${value.commit}:tracked.txt`])).trim()).toBe("tracked");
    const blob = (await clone.git(["rev-parse", `${value.commit}:new.txt`])).trim();
    expect(await readdir(path.join(clone.objects, blob.slice(0, 2)))).toContain(blob.slice(2));
    await fsckStrict(clone);
  });
});

describe("ref updates", () => {
  it("are refused by git inside the quarantine", async () => {
    const repo = await makeRepo();
    const head = (await repo.git(["rev-parse", "HEAD"])).trim();
    const error = await rejectionOf(
      withObjectQuarantine(repo.dir, "refs", (ctx) => ctx.git(["update-ref", "refs/reclaim/inside", head]), {
        env: gitEnv,
      }),
    );
    expect((error as QuarantineError).code).toBe("RECLAIM_ERR_QUARANTINE_GIT_FAILED");
    expect(error.message).toContain("quarantine");
  });

  it("move together after publication, and not at all when an old value changed", async () => {
    const repo = await makeRepo();
    const head = (await repo.git(["rev-parse", "HEAD"])).trim();
    await writeFile(path.join(repo.dir, "one.txt"), "one\n");
    const realFiles = await indexAndHead(repo);
    const { value } = await capture(repo, { ref: "refs/reclaim/a" });
    const stale = await rejectionOf(
      withObjectQuarantine(
        repo.dir,
        "refs",
        async (ctx) => {
          const blob = (
            await ctx.git(["hash-object", "-w", "--stdin"], { input: "published anyway\n" })
          ).trim();
          ctx.updateRefAfterPublish("refs/reclaim/b", head);
          ctx.updateRefAfterPublish("refs/reclaim/a", head, head); // stale: a is at value.commit
          return blob;
        },
        { env: gitEnv },
      ),
    );
    expect((stale as QuarantineError).code).toBe("RECLAIM_ERR_QUARANTINE_REF_UPDATE_FAILED");
    expect((await repo.git(["rev-parse", "refs/reclaim/a"])).trim()).toBe(value.commit);
    await expect(repo.git(["rev-parse", "--verify", "-q", "refs/reclaim/b"])).rejects.toThrow();
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
  });
});

describe("the environment handed to git", () => {
  it("quotes an alternate path as git parses it", async () => {
    const odd = path.join(await tempDir(), 'odd:dir "quoted"');
    await mkdir(odd, { recursive: true });
    const store = path.join(odd, "objects");
    // Put an object into the odd store only, then read it through a quoted alternate.
    await git(os.tmpdir(), ["init", "-q", "--bare", odd]);
    const oid = execFileSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: odd,
      env: { ...gitEnv, GIT_OBJECT_DIRECTORY: store },
      input: "only in the odd store\n",
    })
      .toString()
      .trim();
    const other = await makeRepo();
    const read = (alternates: string): boolean => {
      try {
        execFileSync("git", ["cat-file", "-e", oid], {
          stdio: "pipe", // the unquoted case makes git complain on stderr: expected
          cwd: other.dir,
          env: { ...gitEnv, GIT_ALTERNATE_OBJECT_DIRECTORIES: alternates },
        });
        return true;
      } catch {
        return false;
      }
    };
    expect(quoteAlternate(store)).toMatch(/^".*"$/);
    expect(read(quoteAlternate(store))).toBe(true);
    expect(read(store)).toBe(false); // unquoted, git splits it at ":"
    expect(quoteAlternate("/plain/path")).toBe("/plain/path");
  });

  it("appends the real store to the caller's alternates and points objects and index at the quarantine", async () => {
    const repo = await makeRepo();
    const seen = await withObjectQuarantine(repo.dir, "env", async (ctx) => ctx.env, {
      env: { ...gitEnv, GIT_ALTERNATE_OBJECT_DIRECTORIES: "/somewhere/else", GIT_DIR: "/wrong" },
    });
    const env = seen.value;
    expect(env.GIT_ALTERNATE_OBJECT_DIRECTORIES).toBe(`/somewhere/else:${repo.objects}`);
    expect(env.GIT_OBJECT_DIRECTORY).toMatch(
      new RegExp(`^${repo.objects}/tmp_objdir-reclaim-env-[0-9a-f-]{36}$`),
    );
    expect(env.GIT_QUARANTINE_PATH).toBe(env.GIT_OBJECT_DIRECTORY);
    expect(env.GIT_INDEX_FILE).toBe(path.join(env.GIT_OBJECT_DIRECTORY!, "index"));
    expect(env.GIT_DIR).toBeUndefined();
  });
});

describe("misuse", () => {
  it("refuses a bad purpose and a directory that is not a repository before creating anything", async () => {
    const repo = await makeRepo();
    const purpose = await rejectionOf(withObjectQuarantine(repo.dir, "Bad Purpose", async () => 1));
    expect(purpose).toBeInstanceOf(ConfigError);
    const plain = await tempDir();
    const notRepo = await rejectionOf(withObjectQuarantine(plain, "capture", async () => 1, { env: gitEnv }));
    expect((notRepo as QuarantineError).code).toBe("RECLAIM_ERR_QUARANTINE_NOT_A_REPOSITORY");
    expect((notRepo as QuarantineError).permanent).toBe(true);
    expect(await readdir(plain)).toEqual([]);
  });
});
