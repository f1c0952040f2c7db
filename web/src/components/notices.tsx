/** The notices of lib/notify.ts, newest last; errors are announced to screen readers at once. */
import { dismiss, notices } from '../lib/notify.ts';
import { useStore } from '../lib/store.ts';

export function Notices() {
  const list = useStore(notices);
  return (
    <div class="notices" aria-live="assertive">
      {list.map((n) => (
        <div key={n.id} class={`notice ${n.kind}`} role={n.kind === 'error' ? 'alert' : 'status'}>
          <span>{n.text}</span>
          <button type="button" class="link" aria-label="Dismiss" onClick={() => dismiss(n.id)}>×</button>
        </div>
      ))}
    </div>
  );
}
