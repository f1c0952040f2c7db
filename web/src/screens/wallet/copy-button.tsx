/**
 * Copies a text (a deposit address, an API key's secret) to the clipboard and says so; where the
 * browser refuses the clipboard, says that in words and selects the text to copy by hand.
 */
import { useState } from 'preact/hooks';
import { notify, reportError } from '../../lib/notify.ts';

export function CopyButton(props: { text: string; what: string; target?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      if (navigator.clipboard === undefined) throw new Error('this page has no clipboard access (it needs https or localhost)');
      await navigator.clipboard.writeText(props.text);
      setCopied(true);
      notify('ok', `${props.what} copied to the clipboard`);
      setTimeout(() => setCopied(false), 2_000);
    } catch (e) {
      reportError(e, `copying the ${props.what.toLowerCase()} (select it and copy by hand)`);
      selectText(props.target);
    }
  };
  return (
    <button type="button" class="ghost small" onClick={copy} aria-label={`Copy the ${props.what.toLowerCase()}`}>
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}

function selectText(id: string | undefined): void {
  const node = id === undefined ? null : document.getElementById(id);
  const selection = getSelection();
  if (node === null || selection === null) return;
  const range = document.createRange();
  range.selectNodeContents(node);
  selection.removeAllRanges();
  selection.addRange(range);
}
