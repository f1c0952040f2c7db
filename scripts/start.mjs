// `npm start`: runs the service built ahead by `npm install` (dist/main.js), rebuilding it (and the
// web terminal, web/dist) first when it is missing or older than the sources, so an edit to src/ never runs a stale build
// (docs/architecture.md, "Build and start"). The check stats the build's inputs (about 1-2 ms) and
// loads esbuild only when it has to build.
import process from 'node:process';
import { buildDist, staleReason } from './build.mjs';
import { buildWeb, webStaleReason } from './build-web.mjs';

const reason = staleReason();
if (reason !== null) {
  process.stderr.write(`start: ${reason}; rebuilding dist/ (scripts/build.mjs)\n`);
  await buildDist();
}
const webReason = webStaleReason();
if (webReason !== null) {
  process.stderr.write(`start: ${webReason}; rebuilding the web terminal (scripts/build-web.mjs)\n`);
  await buildWeb();
}
await import('../dist/main.js');
