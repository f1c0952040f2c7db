/**
 * `read` shared by every caller that arrives while it has not been sent yet. A read in flight
 * serves only the callers that came before it: a later caller may need what was committed after
 * that read began (docs/architecture.md "Distributed mode"), so it joins the next read, sent when
 * the one in flight returns. At most one read is in flight and one waits.
 */
export function coalesced<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | null = null;
  let next: Promise<T> | null = null;
  const send = (): Promise<T> => (inFlight = read().finally(() => (inFlight = null)));
  return () => {
    if (next !== null) return next;
    if (inFlight === null) return send();
    return (next = inFlight.catch(() => undefined).then(() => {
      next = null;
      return send();
    }));
  };
}
