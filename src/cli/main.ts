#!/usr/bin/env node
import { main } from './program.js';

// No top-level await: the single executable's bundle of this file is CommonJS (scripts/sea/build.ts).
void main(process.argv.slice(2), process.env).then((code) => {
  process.exitCode = code;
});
