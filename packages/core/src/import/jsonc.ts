import { err, ok, type Result } from 'neverthrow';

/**
 * Reads JSON with comments (`//`, `/* … *\/`) and trailing commas, as VS Code and Cursor write their `mcp.json`
 * (JSONC): the comments and the commas before a `}` or `]` are blanked out, outside strings only, and what is left
 * is read by `JSON.parse`. A leading byte order mark is dropped. Blanking keeps every other character where it was,
 * so a position `JSON.parse` reports is the position in the text given.
 *
 * The error never quotes the text (it may hold secrets): it says where reading stopped, as line and column.
 */
export function readJsonc(text: string): Result<unknown, string> {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const blanked = blank(source);
  if (typeof blanked !== 'string') return err(blanked.problem);
  try {
    return ok(JSON.parse(blanked));
  } catch (error) {
    // V8 names the position in some messages ("… in JSON at position 12"), never without quoting the text in others.
    const at = /position (\d+)/.exec(String((error as Error).message))?.[1];
    return err(at === undefined ? 'is not valid JSON (JSONC: comments and trailing commas are accepted)' : `is not valid JSON at ${where(source, Number(at))}`);
  }
}

/** The text with comments and trailing commas turned into spaces (newlines kept), or why it cannot be read. */
function blank(text: string): string | { problem: string } {
  const out = text.split('');
  let i = 0;
  /** The index of the last comma outside a string whose fate is not yet known: trailing if a `}` or `]` comes next. */
  let comma = -1;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '"') {
      comma = -1;
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      if (i >= text.length) return { problem: `is not valid JSON at ${where(text, text.length)}: a string is not closed` };
      i++;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n' && text[i] !== '\r') out[i++] = ' ';
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end === -1) return { problem: `is not valid JSON at ${where(text, i)}: a /* comment is not closed` };
      for (; i < end + 2; i++) if (text[i] !== '\n' && text[i] !== '\r') out[i] = ' ';
      continue;
    }
    if (c === ',') comma = i;
    else if ((c === '}' || c === ']') && comma !== -1) {
      out[comma] = ' ';
      comma = -1;
    } else if (!/\s/.test(c)) comma = -1;
    i++;
  }
  return out.join('');
}

/** `line L, column C` (both from 1) of the position in the text. */
function where(text: string, position: number): string {
  const before = text.slice(0, position);
  const line = before.split(/\r\n|\r|\n/).length;
  const column = position - Math.max(before.lastIndexOf('\n'), before.lastIndexOf('\r'));
  return `line ${line}, column ${column}`;
}
