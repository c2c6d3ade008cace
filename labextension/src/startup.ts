/**
 * Cells run while the kernel starts run once it is ready, in the order they were run.
 *
 * A kernel that is still starting (the browser edition's Python takes seconds to load) drops a cell run before it
 * is ready: the cell shows [*] and then nothing. Here Shift+Enter and Ctrl+Enter on a notebook whose kernel is not
 * yet idle are held (the cell shows [*] meanwhile, and Shift+Enter moves on as usual) and replayed, one after the
 * other, as soon as the kernel reports idle.
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

const RUN = 'notebook:run-cell';

/** Whether ``panel``'s kernel has started: it has one, connected, and it has said it is idle or busy. */
export function started(panel: NotebookPanel): boolean {
  const kernel = panel.sessionContext.session?.kernel;
  return !!kernel && kernel.connectionStatus === 'connected' && (kernel.status === 'idle' || kernel.status === 'busy');
}

export function holdRunsWhileStarting(app: JupyterFrontEnd, tracker: INotebookTracker): void {
  const held = new Map<NotebookPanel, number[]>(); // per notebook, the cells run before its kernel was ready

  const replay = async (panel: NotebookPanel) => {
    const cells = held.get(panel) ?? [];
    held.delete(panel);
    for (const index of cells) {
      panel.content.activeCellIndex = index;
      await app.commands.execute(RUN);
    }
  };

  const wait = (panel: NotebookPanel) => {
    const check = () => {
      if (panel.isDisposed) {
        held.delete(panel);
      } else if (started(panel)) {
        void replay(panel);
      } else {
        window.setTimeout(check, 100);
      }
    };
    check();
  };

  window.addEventListener(
    'keydown',
    (event: KeyboardEvent) => {
      const which = event.altKey ? null : event.shiftKey ? 'shift' : event.ctrlKey || event.metaKey ? 'ctrl' : null;
      const panel = tracker.currentWidget;
      if (event.key !== 'Enter' || !which || !panel || !panel.node.contains(event.target as Node) || started(panel)) {
        return;
      }
      const notebook = panel.content;
      const index = notebook.activeCellIndex;
      const cell = notebook.activeCell;
      if (!cell || cell.model.type !== 'code') {
        return; // a Markdown cell renders without a kernel
      }
      event.preventDefault();
      event.stopImmediatePropagation();
      (cell as unknown as { setPrompt(value: string): void }).setPrompt('*');
      const first = !held.has(panel);
      held.set(panel, [...(held.get(panel) ?? []), index]);
      if (which === 'shift' && index < notebook.widgets.length - 1) {
        notebook.activeCellIndex = index + 1;
      }
      if (first) {
        wait(panel);
      }
    },
    true
  );
}
