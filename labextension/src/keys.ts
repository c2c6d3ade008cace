/**
 * What a key does while jupyterlab-slideshow's deck presents a notebook, whatever was touched last.
 *
 * The deck binds its keys to the notebook when it has the focus (in command mode); a slider, a drop-down or a click
 * on the slide takes the focus away, and then → moves the slider, Space clicks a button, PageDown (what a
 * presenter's clicker sends) does nothing and → scrolls the slide sideways. Here the page sees every key first, so:
 *
 * - → , Space, PageDown (a clicker's "next"): the next step of the deck (a fragment or the next slide);
 * - ← , Shift+Space, PageUp (a clicker's "back"): the step before;
 * - Escape: leave the deck (in a code cell being edited, Escape first leaves the editor, as in JupyterLab);
 * - b or . (a clicker's "blank screen"): a black screen, until the next key or click;
 * - n: the presenter view (the current slide's speaker notes, in a second window);
 * - F5 (a clicker's "start presenting") and every other letter, digit or sign: nothing (JupyterLab's notebook would
 *   otherwise insert, cut or retype cells of the chapter in the middle of the lecture, or reload the page);
 * - ↑ and ↓ stay with a focused slider or drop-down, to set it by keyboard on a slide.
 *
 * Where the text cursor is (a text box, a code cell being edited) the arrows, Space, letters and signs are typing;
 * PageDown and PageUp still step the deck.
 */

export type Action = 'next' | 'back' | 'stop' | 'blank' | 'notes' | 'ignore';

/** Where a key lands: in a text box, in a code editor, or on anything else (a slider, a button, the slide). */
export type Target = 'text' | 'code' | 'other';

/** The bits of a key event that decide its action. */
export interface IKey {
  key: string;
  shiftKey: boolean;
  ctrlKey: boolean;
  altKey: boolean;
  metaKey: boolean;
}

/** The deck's action for a key pressed on ``target`` while the deck presents (null: leave the key alone). */
export function deckAction(event: IKey, target: Target): Action | null {
  if (event.ctrlKey || event.altKey || event.metaKey) {
    return null; // the command palette, copy, the browser's own shortcuts
  }
  switch (event.key) {
    case 'PageDown':
      return 'next';
    case 'PageUp':
      return 'back';
    case 'F5':
      return 'ignore';
    case 'Escape':
      return target === 'code' ? null : 'stop';
  }
  if (target !== 'other') {
    return null;
  }
  switch (event.key) {
    case 'ArrowRight':
      return 'next';
    case 'ArrowLeft':
      return 'back';
    case ' ':
      return event.shiftKey ? 'back' : 'next';
    case 'b':
    case 'B':
    case '.':
      return 'blank';
    case 'n':
    case 'N':
      return 'notes';
  }
  return event.key.length === 1 ? 'ignore' : null;
}

const NOT_TYPED = new Set(['range', 'checkbox', 'radio', 'button', 'submit', 'reset', 'color', 'file', 'image']);

/** Whether ``element`` takes typed text: a text box, or a code editor (CodeMirror's editable content). */
export function targetOf(element: EventTarget | null): Target {
  if (!(element instanceof Element)) {
    return 'other';
  }
  if (element.closest('.cm-editor')) {
    return 'code';
  }
  if (element instanceof HTMLTextAreaElement) {
    return 'text';
  }
  if (element instanceof HTMLInputElement) {
    return NOT_TYPED.has(element.type) ? 'other' : 'text';
  }
  return (element as HTMLElement).isContentEditable ? 'text' : 'other';
}
