/**
 * Process entry point: `npm start`. Reads settings, builds the service, listens, and shuts down
 * cleanly on SIGINT/SIGTERM (everything acknowledged is already durable, so a kill -9 is safe too).
 */
import { DataDirError } from './adapters/store/data-dir.ts';
import { ConfigError, loadSettings, type Settings } from './config/env.ts';
import { startCoreRole, type CoreLog } from './roles/core.ts';
import { createGatewayRole } from './roles/gateway.ts';
import { startProjectorRole } from './roles/projector.ts';
import { createService, type Service } from './service.ts';

async function main(): Promise<void> {
  let settings;
  try {
    settings = loadSettings();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  if (settings.role === 'core' || settings.role === 'projector') return runHeadless(settings, settings.role);
  let service: Pick<Service, 'app' | 'listen' | 'close'>;
  try {
    service = settings.role === 'gateway' ? await createGatewayRole(settings) : await createService(settings);
  } catch (error) {
    if (error instanceof DataDirError) {
      console.error(`data folder refused: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  let address: string;
  try {
    address = await service.listen();
  } catch (error) {
    // Recovery refused the data (a journal the code does not reproduce, a corrupt record): say why and stop.
    service.app.log.fatal({ err: error }, 'the exchange could not start');
    process.exit(1);
  }
  service.app.log.info(`exchange listening on ${address} (public origin ${settings.publicOrigin}); docs at /docs`);
  const shutdown = async (signal: string) => {
    service.app.log.info(`${signal}: shutting down`);
    await service.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

/**
 * The roles without an API: a core (leads or stands by) and a projector. On a fatal error they exit;
 * their supervisor starts them again (a core comes back as a standby).
 */
async function runHeadless(settings: Settings, role: 'core' | 'projector'): Promise<void> {
  const log = roleLog(role, settings.logLevel);
  const onFatal = (error: unknown) => {
    log.error(`exchange ${role} stopped; exiting`, { error: error instanceof Error ? error.message : String(error) });
    setImmediate(() => process.exit(1));
  };
  const running = role === 'core' ? await startCoreRole(settings, { log, onFatal }) : await startProjectorRole(settings, { log, onFatal });
  log.info(`exchange ${role} started; health at ${running.address}/health`);
  const shutdown = async (signal: string) => {
    log.info(`${signal}: shutting down`);
    await running.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

/** A headless role's log lines: one JSON object per line, as the gateway's (pino) are. */
function roleLog(role: string, level: Settings['logLevel']): CoreLog {
  const levels = { debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 100 } as const;
  const write = (name: 'info' | 'warn' | 'error') => (msg: string, detail?: Record<string, unknown>) => {
    if (levels[name] < levels[level]) return;
    process.stdout.write(`${JSON.stringify({ level: levels[name], time: Date.now(), role, pid: process.pid, msg, ...detail })}\n`);
  };
  return { info: write('info'), warn: write('warn'), error: write('error') };
}

void main();
