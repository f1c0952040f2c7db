/** The terminal's entry: mounts the app on #app and signs in again as last time, without a prompt. */
import { render } from 'preact';
import { App } from './app.tsx';
import { resume } from './api/account.ts';
import { reportError } from './lib/notify.ts';
import './styles.css';

render(<App />, document.getElementById('app')!);
resume().catch((e) => reportError(e, 'signing in again'));
