/** Perp and future trading (built next). */
export function Trade(props: { marketId: string }) {
  return <div class="panel">Trade {props.marketId}</div>;
}
