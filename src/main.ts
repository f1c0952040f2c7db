/**
 * Process entry point: `npm start`. Reads settings, builds the service, listens, and shuts down
 * cleanly on SIGINT/SIGTERM (everything acknowledged is already durable, so a kill -9 is safe too).
 */
import { DataDirError } from './adapters/store/data-dir.ts';
import { ConfigError, loadSettings } from './config/env.ts';
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
  let service: Service;
  try {
    service = await createService(settings);
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

void main();
