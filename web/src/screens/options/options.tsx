/** Options (built next). */
export function Options(props: { underlying: string }) {
  return <div class="panel">Options {props.underlying}</div>;
}
