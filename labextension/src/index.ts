/**
 * ppedu's lecture tools for jupyterlab-slideshow's deck (the course's lecture mode, README "Lecture mode"):
 *
 * - keys: a presenter's clicker and the keyboard drive the deck whatever was touched last (./keys.ts);
 * - never trapped: Escape leaves the deck, and a JupyterLab reopened after the browser closed mid-lecture opens on
 *   the notebook, not on a deck without menus (the deck keeps "presenting" in its settings and would resume);
 * - a presenter view: a second window with the current slide's speaker notes (./notes.ts), a clock, and the next
 *   slide's first line; keys pressed there drive the deck too;
 * - cells run while the kernel starts run once it is ready (./startup.ts; the browser edition has this too).
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, showErrorMessage } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { Contents } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';

import { Action, deckAction, targetOf } from './keys';
import { holdRunsWhileStarting } from './startup';
import { ICell, notesPath, parseNotes, slideOf, slideStarts } from './notes';

const DECK_SETTINGS = 'jupyterlab-slideshow:plugin';
const PRESENTER = 'ppedu-lecture:presenter-view';
const NEXT = { direction: 'down', alternate: 'forward' };
const BACK = { direction: 'up', alternate: 'back' };

/** A lectern with a note on it: the presenter view's button, beside the deck's in the notebook's toolbar. */
const NOTES_ICON = new LabIcon({
  name: 'ppedu-lecture:notes',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path class="jp-icon3" fill="#616161" ' +
    'd="M4 3h16v12H4zm2 2v2h12V5zm0 4v2h9V9zM9 17h6l1 4H8z"/></svg>'
});

const presenting = () => document.body.dataset.jpDeckMode === 'presenting';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'ppedu-lecture:plugin',
  description: "ppedu's lecture tools for jupyterlab-slideshow's deck",
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ISettingRegistry, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    settings: ISettingRegistry | null,
    palette: ICommandPalette | null
  ) => {
    const presenter = new Presenter(tracker, app.serviceManager.contents, rendermime);
    const blank = document.createElement('div');
    blank.className = 'ppedu-blank';
    blank.style.cssText = 'position:fixed;inset:0;background:#000;z-index:100000;display:none';
    blank.addEventListener('click', () => (blank.style.display = 'none'));
    document.body.append(blank);

    // One step at a time: a clicker pressed twice quickly steps twice, in order.
    let queue = Promise.resolve();
    const run = (action: Action) => (queue = queue.then(() => step(action)).catch(console.warn));

    async function step(action: Action): Promise<void> {
      if (blank.style.display !== 'none') {
        blank.style.display = 'none'; // any key brings the slide back, and does only that
        return;
      }
      const panel = tracker.currentWidget;
      if (action === 'next' || action === 'back') {
        // The deck's own keys need the notebook focused: put the focus back there (not on the slider or button
        // touched last, which the next slide may hide), without scrolling the slide.
        const focused = document.activeElement as HTMLElement | null;
        if (panel && focused && panel.node.contains(focused) && focused !== panel.content.node) {
          focused.blur();
        }
        panel?.content.node.focus({ preventScroll: true });
        await app.commands.execute('deck:go', action === 'next' ? NEXT : BACK);
      } else if (action === 'stop') {
        await app.commands.execute('deck:stop');
      } else if (action === 'blank') {
        blank.style.display = 'block';
      } else if (action === 'notes') {
        await presenter.open();
      }
    }

    const handled = new Set<string>();
    const keydown = (event: KeyboardEvent) => {
      if (!presenting() && blank.style.display === 'none') {
        return;
      }
      const action = deckAction(event, targetOf(event.target));
      if (action === null) {
        return;
      }
      event.preventDefault(); // no slider moves, no button is pressed, nothing scrolls
      event.stopImmediatePropagation();
      handled.add(event.code);
      if (action !== 'ignore') {
        void run(action);
      }
    };
    // Space presses a focused button when the key comes up: the key that stepped the deck does nothing more.
    const keyup = (event: KeyboardEvent) => {
      if (handled.delete(event.code)) {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    };
    window.addEventListener('keydown', keydown, true); // first, before the slide's widgets and JupyterLab's own keys
    window.addEventListener('keyup', keyup, true);
    presenter.forward = (win) => {
      win.addEventListener('keydown', keydown, true);
      win.addEventListener('keyup', keyup, true);
    };

    app.commands.addCommand(PRESENTER, {
      label: (args) => (args.toolbar ? '' : 'Open Presenter View (speaker notes)'),
      icon: NOTES_ICON,
      caption: "The current slide's speaker notes in a second window, for the lecturer's screen",
      execute: () => presenter.open()
    });
    palette?.addItem({ command: PRESENTER, category: 'Decks' });

    // A deck left presenting (the browser closed mid-lecture) resumes as JupyterLab reopens, without its menus: the
    // deck keeps "active" in its settings. Take it off, and stop the deck that resumes from it.
    if (settings) {
      void settings
        .load(DECK_SETTINGS)
        .then(async (deck) => {
          if (deck.get('active').composite !== true) {
            return;
          }
          await deck.set('active', false);
          await app.restored;
          const stop = () => {
            if (presenting()) {
              observer.disconnect();
              void app.commands.execute('deck:stop');
            }
          };
          // Until the lecturer's first click or key: a deck started then is theirs.
          const observer = new MutationObserver(stop);
          observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-deck-mode'] });
          for (const kind of ['pointerdown', 'keydown']) {
            window.addEventListener(kind, () => observer.disconnect(), { capture: true, once: true });
          }
          stop();
        })
        .catch((reason) => console.warn('ppedu-lecture: could not read the deck settings', reason));
    }
  }
};

/** Cells run while the kernel starts run once it is ready (./startup.ts). */
const startup: JupyterFrontEndPlugin<void> = {
  id: 'ppedu-lecture:startup',
  description: 'Cells run while the kernel starts run once it is ready',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => holdRunsWhileStarting(app, tracker)
};

/** The presenter view: a second window with the current slide's speaker notes. */
class Presenter {
  forward: (win: Window) => void = () => undefined;
  private _window: Window | null = null;
  private _notes = new Map<string, Promise<Map<string, string[]> | null>>();
  private _started = 0;
  private _timer = 0;

  constructor(
    private _tracker: INotebookTracker,
    private _contents: Contents.IManager,
    private _rendermime: IRenderMimeRegistry
  ) {
    _tracker.activeCellChanged.connect(() => void this.update());
    _tracker.currentChanged.connect(() => void this.update());
    new MutationObserver(() => {
      this._started = presenting() ? Date.now() : 0;
      void this.update();
    }).observe(document.body, { attributes: true, attributeFilter: ['data-jp-deck-mode'] });
  }

  async open(): Promise<void> {
    const win = window.open('', 'ppedu-presenter', 'popup=yes,width=1000,height=760');
    if (!win) {
      await showErrorMessage('Presenter view', 'The browser blocked the window: allow pop-ups for this site.');
      return;
    }
    this._window = win;
    this._notes.clear(); // read the notes afresh: the lecturer may have edited them
    win.document.open();
    win.document.write(PAGE);
    win.document.close();
    this.forward(win);
    window.clearInterval(this._timer);
    this._timer = window.setInterval(() => this._clock(), 1000);
    await this.update();
  }

  async update(): Promise<void> {
    const win = this._window;
    if (!win || win.closed) {
      window.clearInterval(this._timer);
      return;
    }
    const doc = win.document;
    const panel = this._tracker.currentWidget;
    const where = doc.getElementById('where')!;
    const notes = doc.getElementById('notes')!;
    const next = doc.getElementById('next')!;
    this._clock();
    if (!panel) {
      where.textContent = 'No notebook';
      notes.textContent = 'Open a chapter and start its deck.';
      next.textContent = '';
      return;
    }
    const cells = cellsOf(panel);
    const active = panel.content.activeCellIndex;
    const [start, end] = slideOf(cells, active);
    const starts = slideStarts(cells);
    doc.title = `Presenter view · ${panel.context.path}`;
    where.textContent = `${panel.context.path} · slide ${starts.indexOf(start) + 1} of ${starts.length}`;
    next.textContent = end < cells.length ? `Next: ${cells[end].firstLine}` : 'Next: the end of the deck';
    const byCell = await this._notesOf(panel.context.path);
    if (byCell === null) {
      notes.textContent = `No speaker notes for this chapter: ${notesPath(panel.context.path)} is not in this course.`;
      return;
    }
    const shown: HTMLElement[] = [];
    for (let i = start; i < end; i++) {
      for (const text of byCell.get(cells[i].id) ?? []) {
        const note = doc.createElement('section');
        note.className = i > active ? 'note later' : 'note';
        note.innerHTML = await this._markdown(text);
        shown.push(note);
      }
    }
    if (!shown.length) {
      notes.textContent = 'No note for this slide.';
    } else {
      notes.replaceChildren(...shown);
    }
  }

  private _clock(): void {
    const clock = this._window?.document.getElementById('clock');
    if (!clock) {
      return;
    }
    const now = new Date();
    const time = now.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    const seconds = this._started ? Math.floor((now.getTime() - this._started) / 1000) : 0;
    const elapsed = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
    clock.textContent = this._started ? `${elapsed} on the deck · ${time}` : time;
  }

  private _notesOf(path: string): Promise<Map<string, string[]> | null> {
    let found = this._notes.get(path);
    if (!found) {
      found = this._contents
        .get(notesPath(path), { type: 'file', format: 'text', content: true })
        .then((model) => parseNotes(String(model.content)))
        .catch(() => null); // no such file: a course without the lecturer's notes (the students' release)
      this._notes.set(path, found);
    }
    return found;
  }

  private async _markdown(text: string): Promise<string> {
    const renderer = this._rendermime.createRenderer('text/markdown');
    await renderer.renderModel(new MimeModel({ data: { 'text/markdown': text } }));
    return renderer.node.innerHTML;
  }
}

function cellsOf(panel: NotebookPanel): ICell[] {
  return panel.content.widgets.map((cell) => {
    const slideshow = cell.model.getMetadata('slideshow') as { slide_type?: string } | undefined;
    const source = cell.model.sharedModel.getSource();
    const line = source.split('\n').find((l) => l.trim()) ?? '';
    return { id: cell.model.id, slideType: slideshow?.slide_type ?? null, firstLine: line.replace(/^#+\s*/, '').trim() };
  });
}

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Presenter view</title><style>
body { font: 28px/1.45 system-ui, sans-serif; margin: 0; padding: 0.8em 1.2em 4em; background: #15171a; color: #f2f2f2; }
header { display: flex; justify-content: space-between; gap: 1em; font-size: 20px; color: #b8bec6; }
#clock { font-variant-numeric: tabular-nums; white-space: nowrap; }
.note { margin: 0.6em 0 1em; }
.later { color: #9aa0a6; }
.later::before { content: "after the next press: "; font-size: 20px; }
code { font-size: 90%; }
footer { position: fixed; left: 0; right: 0; bottom: 0; padding: 0.5em 1.2em; background: #23262b; font-size: 20px; }
</style></head><body><header><span id="where"></span><span id="clock"></span></header>
<main id="notes" aria-live="polite"></main><footer id="next"></footer></body></html>`;

export default [plugin, startup];
