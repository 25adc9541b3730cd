/**
 * "Has anything changed?" for a live tree: the same selection and the same reading rules as
 * a capture, without storing anything. Compare `treeDigest` with a snapshot's to know a
 * restore reproduced it (or that contents still match); compare `stateDigest` with the plan
 * a capture was made from to know not even a touch, chmod or rename happened since.
 */
import { encodeSnapshot } from "./encode";
import { planTree, type PlanOptions } from "./plan";

export interface TreeDigestResult {
  treeDigest: string;
  stateDigest: string;
  records: number;
  files: number;
  fileBytes: number;
}

export async function digestTree(root: string, options: PlanOptions): Promise<TreeDigestResult> {
  const plan = await planTree(root, options);
  const { stream, summary } = encodeSnapshot(plan, { signal: options.signal });
  for await (const chunk of stream) void chunk;
  const { treeDigest, records, files, fileBytes } = await summary;
  return { treeDigest, stateDigest: plan.stateDigest, records, files, fileBytes };
}
