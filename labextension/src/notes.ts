/**
 * A chapter's speaker notes, as ppedu.lecture writes them: ``docs/speaker-notes/<chapter>.md`` in the course, a note
 * under each ``**At** … <!-- cell ID -->`` line, ending at the next such line or heading. They are the lecturer's:
 * the chapter holds none, and the students' release has no ``docs/``.
 */

/** ppedu.lecture's ``_ANCHOR`` (tests/test_lecture.py checks that the two read alike). */
export const ANCHOR = /^\*\*At\*\* .*<!-- cell (\S+) -->\s*$/;

/** Each cell's notes (in the file's order), by the id of the cell they follow. */
export function parseNotes(text: string): Map<string, string[]> {
  const notes = new Map<string, string[]>();
  let anchor: string | null = null;
  let lines: string[] = [];
  for (const line of [...text.split(/\r?\n/), '## end']) {
    const found = ANCHOR.exec(line);
    if (found || line.startsWith('#')) {
      if (anchor !== null) {
        notes.set(anchor, [...(notes.get(anchor) ?? []), lines.join('\n').trim()]);
      }
      anchor = found ? found[1] : null;
      lines = [];
    } else if (anchor !== null) {
      lines.push(line);
    }
  }
  return notes;
}

/** Where a notebook's notes are: ``notebooks/06-dualpipe.ipynb`` → ``docs/speaker-notes/06-dualpipe.md``. */
export function notesPath(notebook: string): string {
  const parts = notebook.split('/');
  const stem = parts.pop()!.replace(/\.ipynb$/, '');
  parts.pop(); // the notebooks' folder: the course is the folder above it
  return [...parts, 'docs', 'speaker-notes', `${stem}.md`].join('/');
}

/** A cell as the deck sees it: its id, its slide type and its first line. */
export interface ICell {
  id: string;
  slideType: string | null;
  firstLine: string;
}

/** The cells [start, end) of the slide that holds cell ``index``: from the last cell typed "slide" at or before it to
 * the next one (the notebook's first cell always opens a slide). */
export function slideOf(cells: ICell[], index: number): [number, number] {
  let start = Math.max(0, Math.min(index, cells.length - 1));
  while (start > 0 && cells[start].slideType !== 'slide') {
    start--;
  }
  let end = start + 1;
  while (end < cells.length && cells[end].slideType !== 'slide') {
    end++;
  }
  return [start, end];
}

/** The slides' first cells, in order. */
export function slideStarts(cells: ICell[]): number[] {
  return cells.flatMap((cell, i) => (i === 0 || cell.slideType === 'slide' ? [i] : []));
}
