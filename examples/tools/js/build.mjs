// Builds tool.js into a WASI 0.2 component with componentize-js (its API:
// the `jco componentize` CLI fails on some Node versions).
//   node build.mjs [OUT.wasm] [WIT_DIR]
import { componentize } from '@bytecodealliance/componentize-js';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const out = process.argv[2] || 'word_count.wasm';
const wit = process.argv[3] || here('wit');
const { component } = await componentize({
  sourcePath: here('tool.js'),
  witPath: wit,
  worldName: 'warden:tool/component',
  // A tool gets no network, and needs no clock or randomness here; stdio
  // stays for error stacks on stderr.
  disableFeatures: ['http', 'fetch-event'],
});
await writeFile(out, component);
console.log(`wrote ${out} (${(component.length / 1e6).toFixed(1)} MB)`);
