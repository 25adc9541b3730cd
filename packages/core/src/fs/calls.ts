/**
 * The filesystem calls of the walks (survey, removal, proven directories), through node:fs's
 * callback API: the same syscalls as node:fs/promises, for about a third less CPU per call on
 * Node 20 (a batch makes tens of thousands of them; the promise API's per-call overhead was
 * most of a walk's cost).
 */
import {
  lstat as lstatCb,
  readdir as readdirCb,
  rename as renameCb,
  rmdir as rmdirCb,
  stat as statCb,
  unlink as unlinkCb,
  type Stats,
} from "node:fs";

const call = <R>(run: (done: (error: NodeJS.ErrnoException | null, result: R) => void) => void) =>
  new Promise<R>((resolve, reject) => run((error, result) => (error ? reject(error) : resolve(result))));

export const lstat = (at: string) => call<Stats>((done) => lstatCb(at, done));
export const stat = (at: string) => call<Stats>((done) => statCb(at, done));
export const readdir = (at: string) => call<string[]>((done) => readdirCb(at, done));
export const rename = (from: string, to: string) =>
  call<void>((done) => renameCb(from, to, (error) => done(error, undefined)));
export const rmdir = (at: string) => call<void>((done) => rmdirCb(at, (error) => done(error, undefined)));
export const unlink = (at: string) => call<void>((done) => unlinkCb(at, (error) => done(error, undefined)));
