/**
 * Bytes a stage of a sealing or storage pipeline may buffer before it applies backpressure.
 * Node's defaults (16 KiB for transforms and file writes, 64 KiB for file reads) stall a
 * 1 MiB-chunk pipeline after every chunk, so encryption, hashing and disk I/O never overlap;
 * measured on the 2-core reference machine, 4 MiB stages more than double seal+store
 * throughput. Memory stays bounded: a few stages of 4 MiB each.
 */
export const PIPELINE_HIGH_WATER_MARK = 4 * 1024 * 1024;
