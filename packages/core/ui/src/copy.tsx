import { useState } from 'preact/hooks';

/**
 * Copies `text` with the Clipboard API (the page is a secure context: https, or http on localhost/127.0.0.1) and says
 * so in a live region; where the browser refuses, it says to select the text instead.
 */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied.');
    } catch {
      setSaid('The browser did not allow copying: select the text and copy it.');
    }
  };
  return (
    <span class="copy">
      <button type="button" onClick={copy} aria-label={label}>
        Copy
      </button>
      <span role="status" class="muted">
        {said}
      </span>
    </span>
  );
}

/** Text to paste somewhere else: shown as it is (never as HTML), focusable when it scrolls, with a copy button. */
export function Snippet({ id, title, text }: { id: string; title: string; text: string }) {
  return (
    <figure class="snippet">
      <figcaption id={`${id}-caption`}>{title}</figcaption>
      <pre id={id} tabIndex={0} aria-labelledby={`${id}-caption`}>
        <code>{text}</code>
      </pre>
      <CopyButton text={text} label={`Copy ${title}`} />
    </figure>
  );
}
