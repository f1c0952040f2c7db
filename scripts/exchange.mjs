#!/usr/bin/env node
// The `exchange` command in this repository (`npx exchange …`, `npm run cli -- …`): runs the SDK's
// CLI, sdk/src/cli.ts, from its TypeScript sources through tsx (a dependency of the service), so it
// needs no build. Outside the repository the same CLI is the `exchange` bin of @exchange/sdk.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../sdk/src/cli.ts');
runCli();
