/** Wallet (built next). */
export function Wallet() {
  return <div class="panel">Wallet</div>;
}
