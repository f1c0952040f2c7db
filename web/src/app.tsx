/**
 * The terminal's frame: the top bar (screens, the signed-in account), the screen of the current
 * route, the notices, and the status bar (every live stream's state, the server's clock).
 */
import { Markets } from './screens/markets.tsx';
import { Trade } from './screens/trade/trade.tsx';
import { Options } from './screens/options/options.tsx';
import { Spot } from './screens/spot/spot.tsx';
import { Wallet } from './screens/wallet/wallet.tsx';
import { AccountMenu } from './components/account-menu.tsx';
import { Notices } from './components/notices.tsx';
import { StatusBar } from './components/status-bar.tsx';
import { useRoute } from './lib/router.ts';

const SCREENS = [
  { id: 'markets', label: 'Markets' },
  { id: 'trade', label: 'Perps & futures' },
  { id: 'options', label: 'Options' },
  { id: 'spot', label: 'Spot' },
  { id: 'wallet', label: 'Wallet' },
] as const;

export function App() {
  const route = useRoute();
  return (
    <div class="frame">
      <header class="topbar">
        <a class="brand" href="#/markets">
          Exchange<span class="brand-sub">USDC-settled</span>
        </a>
        <nav aria-label="Screens">
          {SCREENS.map((s) => (
            <a key={s.id} href={`#/${s.id}`} class={route.screen === s.id ? 'active' : ''} aria-current={route.screen === s.id ? 'page' : undefined}>
              {s.label}
            </a>
          ))}
          <a href="/docs" target="_blank" rel="noopener">API</a>
        </nav>
        <AccountMenu />
      </header>
      <main class="screen">{screen(route.screen, route.arg)}</main>
      <Notices />
      <StatusBar />
    </div>
  );
}

function screen(id: string, arg: string | undefined) {
  switch (id) {
    case 'trade':
      return <Trade marketId={arg ?? 'BTC-PERP'} />;
    case 'options':
      return <Options underlying={arg ?? 'BTC'} />;
    case 'spot':
      return <Spot marketId={arg ?? 'BTC-USDC'} />;
    case 'wallet':
      return <Wallet />;
    default:
      return <Markets />;
  }
}
