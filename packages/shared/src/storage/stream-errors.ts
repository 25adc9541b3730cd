import { PassThrough, type Readable } from "node:stream";

/**
 * `source` re-emitted with every error passed through `map` first, so consumers of a provider's
 * stream see StorageErrors (with the original as `cause`) whichever library produced the bytes.
 */
export function mapStreamErrors(source: Readable, map: (error: unknown) => Error): Readable {
  const out = new PassThrough();
  source.on("error", (error) => out.destroy(map(error)));
  out.on("close", () => {
    if (!source.destroyed) source.destroy();
  });
  source.pipe(out);
  return out;
}
