// The swarm page's task grid: one cell per task on a canvas (10,000 tasks are 10,000 rects drawn in
// one pass, not 10,000 DOM nodes), redrawn at most once a frame, clickable and keyboard-driven
// (arrows move, Enter opens). States are kept in a Uint8Array indexed by task position.
import { colorOf, GRID_CLASSES, type GridClass } from "./task-states.ts";

export class TaskGrid {
  private readonly canvas: HTMLCanvasElement;
  private ids: string[] = [];
  private readonly index = new Map<string, number>();
  private states = new Uint8Array(0);
  private focused = 0;
  private cell = 12;
  private cols = 1;
  private frame = 0;
  /** How many full draws ran, and the first one's time: the benchmark reads them. */
  draws = 0;
  private marked = false;
  onOpen: (taskId: string) => void = () => {};

  constructor(canvas: HTMLCanvasElement) {
    this.canvas = canvas;
    canvas.tabIndex = 0;
    canvas.setAttribute("role", "grid");
    canvas.addEventListener("click", (event) => {
      const i = this.hit(event.offsetX, event.offsetY);
      if (i !== null) {
        this.focused = i;
        this.onOpen(this.ids[i] ?? "");
      }
    });
    canvas.addEventListener("keydown", (event) => this.key(event));
    new ResizeObserver(() => this.schedule()).observe(canvas);
  }

  setTasks(tasks: readonly [string, GridClass][]): void {
    this.ids = tasks.map((t) => t[0]);
    this.index.clear();
    this.states = new Uint8Array(tasks.length);
    for (const [i, [id, cls]] of tasks.entries()) {
      this.index.set(id, i);
      this.states[i] = GRID_CLASSES.indexOf(cls);
    }
    this.focused = Math.min(this.focused, Math.max(0, tasks.length - 1));
    this.schedule();
  }

  update(changes: readonly [string, GridClass][]): void {
    for (const [id, cls] of changes) {
      const i = this.index.get(id);
      if (i !== undefined) this.states[i] = GRID_CLASSES.indexOf(cls);
    }
    this.schedule();
  }

  /** Where a task's cell is, in page coordinates (tests click it). */
  cellCenter(taskId: string): { x: number; y: number } | null {
    const i = this.index.get(taskId);
    if (i === undefined) return null;
    const rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + (i % this.cols) * this.cell + this.cell / 2, y: rect.top + Math.floor(i / this.cols) * this.cell + this.cell / 2 };
  }

  private schedule(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  private layout(): void {
    const width = Math.max(100, this.canvas.clientWidth);
    const n = Math.max(1, this.ids.length);
    // Cells shrink with the swarm: 18 px for a few tasks down to 6 px for 10,000, to keep the grid on a screen or two.
    this.cell = Math.max(6, Math.min(18, Math.floor(Math.sqrt((width * 600) / n))));
    this.cols = Math.max(1, Math.floor(width / this.cell));
    const height = Math.ceil(n / this.cols) * this.cell;
    const ratio = window.devicePixelRatio || 1;
    this.canvas.style.height = `${height}px`;
    if (this.canvas.width !== Math.round(width * ratio) || this.canvas.height !== Math.round(height * ratio)) {
      this.canvas.width = Math.round(width * ratio);
      this.canvas.height = Math.round(height * ratio);
    }
  }

  private draw(): void {
    this.layout();
    const ctx = this.canvas.getContext("2d");
    if (ctx === null) return;
    const ratio = window.devicePixelRatio || 1;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    const gap = this.cell > 8 ? 1 : 0.5;
    // One fillStyle per state, then every cell of it: a few hundred microseconds for 10,000 tasks.
    GRID_CLASSES.forEach((cls, c) => {
      ctx.fillStyle = colorOf(cls);
      for (let i = 0; i < this.states.length; i += 1) {
        if (this.states[i] !== c) continue;
        ctx.fillRect((i % this.cols) * this.cell, Math.floor(i / this.cols) * this.cell, this.cell - gap, this.cell - gap);
      }
    });
    if (document.activeElement === this.canvas && this.ids.length > 0) {
      ctx.strokeStyle = colorOf("focus");
      ctx.lineWidth = 2;
      ctx.strokeRect((this.focused % this.cols) * this.cell + 1, Math.floor(this.focused / this.cols) * this.cell + 1, this.cell - 2, this.cell - 2);
    }
    this.draws += 1;
    this.canvas.dataset.cells = String(this.ids.length);
    this.canvas.setAttribute("aria-label", `${this.ids.length} tasks; arrow keys move, Enter opens ${this.ids[this.focused] ?? ""}`);
    if (!this.marked && this.ids.length > 0) {
      this.marked = true;
      performance.mark("edgeswarm:grid-drawn");
    }
  }

  private hit(x: number, y: number): number | null {
    const col = Math.floor(x / this.cell);
    if (col >= this.cols) return null;
    const i = Math.floor(y / this.cell) * this.cols + col;
    return i < this.ids.length ? i : null;
  }

  private key(event: KeyboardEvent): void {
    const moves: Record<string, number> = {
      ArrowRight: 1,
      ArrowLeft: -1,
      ArrowDown: this.cols,
      ArrowUp: -this.cols,
      Home: -this.focused,
      End: this.ids.length,
    };
    const move = moves[event.key];
    if (move !== undefined) {
      event.preventDefault();
      this.focused = Math.max(0, Math.min(this.ids.length - 1, this.focused + move));
      this.schedule();
    } else if (event.key === "Enter" && this.ids[this.focused] !== undefined) {
      this.onOpen(this.ids[this.focused] ?? "");
    }
  }
}
