#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=50
// The flags are src/node-flags.ts's SERVE_NODE_FLAGS (test/unit/node-flags.test.ts keeps them equal);
// `node bin/tessera.js` does not read this line: pass them there too (docs/OPERATIONS.md, "Sizing").
import '../dist/cli.js';
