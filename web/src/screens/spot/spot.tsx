/** Spot (built next). */
export function Spot(props: { marketId: string }) {
  return <div class="panel">Spot {props.marketId}</div>;
}
