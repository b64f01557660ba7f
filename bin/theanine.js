#!/usr/bin/env node
// The theanine command: see src/cli (built to dist/cli by `npm run build`).
// A reader that closes the pipe early (`theanine ... | head -1`) ends the command quietly: the
// CLI's own writes are synchronous and report it (src/cli/io.ts); these handlers cover anything
// else written through the streams (Node emits EPIPE there as an 'error' event).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e) => {
    if (e?.code === 'EPIPE') process.exit(0);
    throw e;
  });
}
import('../dist/cli/main.js').then(async (m) => {
  process.exitCode = await m.main(process.argv);
}).catch((e) => {
  const unbuilt = e?.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/cli/main.js');
  console.error(`theanine: ${unbuilt ? 'not built yet: run npm run build (npm install does it)' : e instanceof Error ? e.message : String(e)}`);
  process.exit(2);
});
