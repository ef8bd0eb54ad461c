// The study page: asks the server for the participant's state and shows one page at a time.
// Everything the page knows comes from /api/state; answers are sent to /api/answer and the
// page moves on only when the server says the answer is saved.
"use strict";

const BASE = document.body.dataset.base;
const SVGNS = "http://www.w3.org/2000/svg";
const LETTERS = "ABCDE";
const main = document.getElementById("main");
let state = null;
let keyHandler = null;  // the current page's keyboard answers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, v);
  return node;
}

function notice(text) {
  const box = document.getElementById("notice");
  box.textContent = text || "";
  box.hidden = !text;
}

async function call(path, body) {
  const options = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  let response;
  try {
    response = await fetch(BASE + path, options);
  } catch (error) {
    throw new Error("The study server cannot be reached. Check your connection and try again; nothing you saved is lost.");
  }
  if (!response.ok) throw new Error((await response.text()).trim() || `The server refused (${response.status}).`);
  return response.json();
}

async function load() {
  try {
    show(await call("/api/state"));
  } catch (error) {
    notice(error.message);
    main.replaceChildren(el("div", {class: "card"}, el("p", {text: "The study could not be loaded."}),
      el("button", {type: "button", onclick: load, text: "Try again"})));
  }
}

function header(data) {
  document.getElementById("title").textContent = data.title;
  document.title = data.title;
  const progress = document.getElementById("progress");
  progress.hidden = false;
  document.getElementById("fill").style.width = `${data.total ? 100 * data.answered / data.total : 0}%`;
  const current = data.page === "item" ? Math.min(data.answered + 1, data.total) : data.answered;
  document.getElementById("count").textContent = data.page === "item"
    ? `Item ${current} of ${data.total}` : `${data.answered} of ${data.total} answered`;
  const help = document.getElementById("help");
  help.hidden = data.page !== "item";
  help.onclick = () => instructions(data, true);
}

function show(data) {
  state = data;
  notice("");
  keyHandler = null;
  header(data);
  main.dataset.page = data.page;
  window.scrollTo(0, 0);
  if (data.page === "welcome") welcome(data);
  else if (data.page === "instructions") instructions(data, false);
  else if (data.page === "item") item(data);
  else done(data);
}

// A message about an earlier attempt goes away as soon as the participant clicks anything else
// (in the capture phase, so before that click's own handler can set a new one).
main.addEventListener("click", () => notice(""), true);

document.addEventListener("keydown", (event) => {
  if (document.querySelector("dialog[open]")) return;  // an enlarged picture is open: its keys are its own
  if (keyHandler && !event.ctrlKey && !event.metaKey && !event.altKey) keyHandler(event);
});

async function seen(block) {
  try {
    show(await call("/api/seen", {block}));
  } catch (error) {
    notice(error.message);
  }
}

// ------------------------------------------------------------------ pages

function welcome(data) {
  const parts = data.blocks.length === 1 ? "one part" : `${data.blocks.length} parts`;
  main.replaceChildren(el("div", {class: "card"},
    el("h1", {text: "Welcome"}),
    el("p", {text: `Thank you for taking part. You will see ${data.total} items in ${parts}:`}),
    el("ul", {}, data.blocks.map((b) => el("li", {text: b}))),
    el("p", {text: "Each part starts with a page that explains it, with a worked example where there is one. " +
      "There is no time limit, but please answer at your own steady pace and without help: the time you take is recorded."}),
    el("p", {text: "Every answer is saved as soon as you submit it. You can close this page and come back later with the same link: " +
      "you will continue where you left off. Answers cannot be changed once submitted."}),
    el("div", {class: "actions"}, el("button", {class: "primary", id: "start", type: "button", onclick: () => seen("__welcome__"), text: "Start"}))));
}

function instructions(data, again) {
  const b = data.block;
  const card = el("div", {class: "card"}, el("h1", {text: b.title}));
  if (b.description) card.append(el("p", {text: b.description}));
  card.append(el("h2", {text: "What to do"}), el("p", {text: b.what}));
  if (b.rules.length || b.notes.length) {
    card.append(el("h2", {text: "Rules"}));
    const list = el("ul", {class: "rules"});
    for (const r of b.rules) list.append(el("li", {}, capital(r.rule) + ". ", el("span", {class: "where", text: `The picture shows this by: ${r.shown_by}.`})));
    for (const note of b.notes) list.append(el("li", {text: note}));
    card.append(list);
  }
  if (b.example && b.images["example-puzzle"]) {
    card.append(el("h2", {text: "Worked example"}), el("p", {class: "muted", text: b.example.caption}),
      el("div", {class: "example"},
        el("figure", {}, el("img", {src: b.images["example-puzzle"], alt: "example puzzle"}), el("figcaption", {text: "The puzzle"})),
        el("figure", {}, el("img", {src: b.images["example-solution"], alt: "its solution"}), el("figcaption", {text: "Its solution"}))));
  }
  card.append(el("h2", {text: "How to answer"}), el("p", {text: b.how}));
  if (again) {
    // Over the item, so that an answer being drawn is still there afterwards.
    const dialog = el("dialog", {class: "instructions"}, card);
    card.append(el("div", {class: "actions"}, el("button", {class: "primary", id: "back", type: "button", text: "Back to the item",
      onclick: () => dialog.close()})));
    dialog.addEventListener("close", () => dialog.remove());
    document.body.append(dialog);
    dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
    dialog.showModal();
    return;
  }
  card.append(el("div", {class: "actions"},
    el("button", {class: "primary", id: "read", type: "button", onclick: () => seen(b.name), text: "I have read this: start"})));
  keyHandler = null;
  main.replaceChildren(card);
}

function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function done(data) {
  document.getElementById("fill").style.width = "100%";
  main.replaceChildren(el("div", {class: "card"}, el("h1", {text: "Thank you!"}),
    el("p", {text: `All ${data.total} answers are saved. You can close this page now.`})));
}

function submitter(button, status, collect) {
  // Sends the answer; the page moves on only when the server confirms it is saved.
  const started = performance.now();
  return async () => {
    notice("");
    const answer = collect();
    if (answer === null) return;
    button.disabled = true;
    status.textContent = "Saving…";
    try {
      const data = await call("/api/answer", {item: state.item.id, answer, elapsed_ms: Math.round(performance.now() - started)});
      show(data);
    } catch (error) {
      notice(error.message);
      status.textContent = "";
      button.disabled = false;
    }
  };
}

function item(data) {
  const it = data.item;
  if (data.kind === "tacit-choice") choiceItem(it);
  else if (data.kind === "tacit-draw") drawItem(it);
  else if (data.kind === "cfeval-rate") rateItem(it);
  else driftItem(it);
}

// ------------------------------------------------------------------ tacit-choice

function choiceItem(it) {
  let chosen = null;
  const status = el("span", {class: "status"});
  const submit = el("button", {class: "primary", id: "submit", type: "button", disabled: true, text: "Submit answer"});
  const buttons = it.options.map((src, p) => el("div", {class: "option", role: "button", tabindex: 0, "data-position": p, onclick: () => choose(p)},
    el("div", {class: "label-row"}, el("span", {class: "label", text: `${LETTERS[p]} · ${p + 1}`}),
      el("button", {type: "button", class: "zoom", title: "see this answer larger", text: "enlarge",
        onclick: (event) => { event.stopPropagation(); enlarge(src, `Answer ${LETTERS[p]}`); }})),
    el("img", {src, alt: `answer ${LETTERS[p]}`})));
  function choose(p) {
    chosen = p;
    buttons.forEach((b, k) => b.classList.toggle("chosen", k === p));
    submit.disabled = false;
    status.textContent = `Answer ${LETTERS[p]} chosen: press Enter or Submit.`;
  }
  const send = submitter(submit, status, () => (chosen === null ? null : {position: chosen}));
  submit.addEventListener("click", send);
  keyHandler = (event) => {
    const key = event.key.toUpperCase();
    const index = "12345".indexOf(key) >= 0 ? "12345".indexOf(key) : LETTERS.indexOf(key);
    if (key.length === 1 && index >= 0) { choose(index); event.preventDefault(); }
    else if (event.key === "Enter" && chosen !== null && !submit.disabled) { event.preventDefault(); send(); }
  };
  main.replaceChildren(
    el("div", {class: "puzzle"}, el("img", {src: it.puzzle, alt: "the puzzle", title: "click to see it larger",
      onclick: () => enlarge(it.puzzle, "The puzzle")})),
    el("p", {class: "question"}, el("strong", {text: state.block.what}), " Press ", el("kbd", {text: "1"}), "–", el("kbd", {text: "5"}), " or ",
      el("kbd", {text: "A"}), "–", el("kbd", {text: "E"}), ", then ", el("kbd", {text: "Enter"}), "."),
    el("div", {class: "options"}, buttons),
    el("div", {class: "actions"}, submit, status));
}

function enlarge(src, caption) {
  // The picture at up to the window's size; Escape, a click or the button closes it.
  const dialog = el("dialog", {class: "zoomed"}, el("div", {class: "label-row"}, el("strong", {text: caption}),
    el("button", {type: "button", text: "Close", onclick: () => dialog.close()})), el("img", {src, alt: caption}));
  dialog.addEventListener("close", () => dialog.remove());
  dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
  document.body.append(dialog);
  dialog.showModal();
}

// ------------------------------------------------------------------ tacit-draw

function drawItem(it) {
  const tools = it.tools;
  const status = el("span", {class: "status"});
  const submit = el("button", {class: "primary", id: "submit", type: "button", text: "Submit answer"});
  const panel = el("aside", {class: "tools"});
  if (tools.kind === "upload") return uploadItem(it, panel, submit, status);
  const image = el("img", {src: it.puzzle, alt: "the puzzle", draggable: "false"});
  const overlay = svg("svg", {class: "overlay", viewBox: `0 0 ${tools.width} ${tools.height}`, preserveAspectRatio: "none"});
  const stage = el("div", {class: "stage"}, image, overlay);
  stage.style.aspectRatio = `${tools.width} / ${tools.height}`;  // the tools are in place before the picture has loaded
  const kinds = {paint: paintTool, toggle: toggleTool, route: routeTool, select: selectTool, voxels: voxelTool, panel: panelTool};
  const collect = kinds[tools.kind](tools, overlay, panel);
  panel.prepend(el("h3", {text: "Task"}), el("p", {class: "help", text: state.block.what}));
  panel.append(el("h3", {text: "How"}), el("p", {class: "help", text: state.block.how}),
    el("div", {class: "actions"}, submit, status));
  submit.addEventListener("click", submitter(submit, status, () => {
    const answer = collect();
    if (typeof answer === "string") { notice(answer); return null; }
    return {tool: answer};
  }));
  main.replaceChildren(el("div", {class: "draw"}, stage, panel));
}

function dragging(overlay, apply) {
  // Pointer down on a target applies the tool there; moving on with the button held applies it
  // to every target passed over. Implicit touch capture is released so the move reaches them.
  let down = false;
  overlay.addEventListener("pointerdown", (event) => {
    const index = event.target.dataset ? event.target.dataset.index : undefined;
    if (index === undefined) return;
    down = true;
    if (event.target.hasPointerCapture && event.target.hasPointerCapture(event.pointerId)) event.target.releasePointerCapture(event.pointerId);
    apply(Number(index), true, event);
    event.preventDefault();
  });
  overlay.addEventListener("pointerover", (event) => {
    const index = event.target.dataset ? event.target.dataset.index : undefined;
    if (down && index !== undefined) apply(Number(index), false, event);
  });
  window.addEventListener("pointerup", () => { down = false; });
}

function shapeFor(target, attrs) {
  return target.shape === "circle"
    ? svg("circle", {cx: target.cx, cy: target.cy, r: target.r, ...attrs})
    : svg("rect", {x: target.x, y: target.y, width: target.w, height: target.h, ...attrs});
}

function centre(target) {
  return target.shape === "circle" ? [target.cx, target.cy] : [target.x + target.w / 2, target.y + target.h / 2];
}

function glyphPath(points, x, y, r) {
  return "M" + points.map(([px, py]) => `${x + px * r} ${y + py * r}`).join("L") + "Z";
}

function swatchChip(entry) {
  if (entry.glyph !== undefined) {
    const icon = svg("svg", {viewBox: "-1.3 -1.3 2.6 2.6"});
    icon.append(entry.glyph === null ? svg("circle", {r: 0.95, fill: entry.colour}) : svg("path", {d: glyphPath(entry.glyph, 0, 0, 1), fill: entry.colour}));
    return icon;
  }
  const chip = el("span", {class: "chip"});
  chip.style.background = entry.colour;
  return chip;
}

function paintTool(tools, overlay, panel) {
  const values = tools.initial.slice();
  let current = tools.palette.length ? tools.palette[0].value : null;
  const marks = svg("g", {"pointer-events": "none"});
  const byValue = new Map(tools.palette.map((entry) => [JSON.stringify(entry.value), entry]));
  function mark(i) {
    const t = tools.targets[i];
    const old = marks.querySelector(`[data-mark="${i}"]`);
    if (old) old.remove();
    const entry = values[i] === null ? null : byValue.get(JSON.stringify(values[i]));
    if (!entry) return;
    const group = svg("g", {"data-mark": i});
    if (entry.glyph !== undefined) {
      const [x, y] = centre(t);
      const r = tools.glyph_radius;
      group.append(entry.glyph === null ? svg("circle", {cx: x, cy: y, r: 0.95 * r, fill: entry.colour})
        : svg("path", {d: glyphPath(entry.glyph, x, y, r), fill: entry.colour}));
    } else if (t.shape === "circle") {
      group.append(svg("circle", {cx: t.cx, cy: t.cy, r: t.r * 0.82, fill: entry.colour}));
    } else {
      const inset = Math.min(t.w, t.h) * 0.08;
      group.append(svg("rect", {x: t.x + inset, y: t.y + inset, width: t.w - 2 * inset, height: t.h - 2 * inset, fill: entry.colour}));
    }
    marks.append(group);
  }
  const targets = svg("g");
  tools.targets.forEach((t, i) => targets.append(shapeFor(t, {class: "target", "data-index": i, fill: "#000", "fill-opacity": 0, stroke: "none"})));
  if (tools.pickers) {
    const pickers = svg("g");
    tools.pickers.forEach((p) => {
      const disc = shapeFor(p, {class: "target", fill: "#000", "fill-opacity": 0, "data-pick": "1"});
      disc.addEventListener("click", () => select(p.value));
      pickers.append(disc);
    });
    overlay.append(pickers);
  }
  overlay.append(targets, marks);
  tools.targets.forEach((_, i) => mark(i));
  dragging(overlay, (i) => { values[i] = current; mark(i); });

  const buttons = [];
  const palette = el("div", {class: "palette"});
  tools.palette.forEach((entry, k) => {
    const button = el("button", {type: "button", class: "swatch", "data-value": JSON.stringify(entry.value), title: entry.label,
      onclick: () => select(entry.value)}, swatchChip(entry), el("span", {text: entry.label}), el("span", {class: "key", text: `${k + 1}`}));
    buttons.push([entry.value, button]);
    palette.append(button);
  });
  if (tools.eraser) {
    const button = el("button", {type: "button", class: "swatch", "data-value": "null", title: "eraser", onclick: () => select(null)},
      el("span", {class: "chip"}), el("span", {text: "eraser"}), el("span", {class: "key", text: "0"}));
    buttons.push([null, button]);
    palette.append(button);
  }
  function select(value) {
    current = value;
    for (const [v, b] of buttons) b.classList.toggle("chosen", JSON.stringify(v) === JSON.stringify(value));
  }
  select(current);
  keyHandler = (event) => {
    const k = Number(event.key);
    if (event.key.length === 1 && k >= 1 && k <= tools.palette.length) select(tools.palette[k - 1].value);
    else if (event.key === "0" && tools.eraser) select(null);
  };
  panel.append(el("h3", {text: "Palette"}), palette,
    el("div", {class: "actions"}, el("button", {type: "button", text: "Clear all", onclick: () => {
      tools.initial.forEach((v, i) => { values[i] = v; mark(i); });
    }})));
  return () => {
    if (tools.required && values.some((v) => v === null)) return "Fill every white place before submitting.";
    return {values};
  };
}

function toggleTool(tools, overlay, panel) {
  const values = tools.initial.slice();
  const marks = svg("g", {"pointer-events": "none"});
  let setTo = 1;
  function mark(i) {
    const old = marks.querySelector(`[data-mark="${i}"]`);
    if (old) old.remove();
    if (!values[i]) return;
    const t = tools.targets[i];
    marks.append(svg("rect", {"data-mark": i, x: t.x, y: t.y, width: t.w, height: t.h, fill: t.colour}));
  }
  const targets = svg("g");
  tools.targets.forEach((t, i) => targets.append(shapeFor(t, {class: "target", "data-index": i, fill: "#000", "fill-opacity": 0})));
  overlay.append(marks, targets);
  tools.targets.forEach((_, i) => mark(i));
  dragging(overlay, (i, first) => {
    if (first) setTo = values[i] ? 0 : 1;
    values[i] = setTo;
    mark(i);
  });
  panel.append(el("h3", {text: "Cells"}), el("p", {class: "help", text: "Filled cells take the shade of the view's glyph."}),
    el("div", {class: "actions"}, el("button", {type: "button", text: "Clear all", onclick: () => {
      values.fill(0); tools.targets.forEach((_, i) => mark(i));
    }})));
  return () => ({values});
}

function routeTool(tools, overlay, panel) {
  const strokes = [];
  let active = -1;
  const cells = [];
  tools.origins.forEach((origin, layer) => {
    for (let r = 0; r < tools.size; r++) for (let c = 0; c < tools.size; c++) {
      cells.push([layer, r, c]);
    }
  });
  const portals = new Set();
  for (const [layers, [r, c]] of tools.portals) portals.add(`${layers[0]},${layers[1]},${r},${c}`);
  const ink = svg("g", {"pointer-events": "none"});
  const hits = svg("g");
  cells.forEach(([layer, r, c], i) => {
    const [ox, oy] = tools.origins[layer];
    hits.append(svg("rect", {class: "cellhit", "data-index": i, x: ox + c * tools.cell, y: oy + r * tools.cell, width: tools.cell, height: tools.cell}));
  });
  overlay.append(hits, ink);
  const same = (a, b) => a[0] === b[0] && a[1] === b[1] && a[2] === b[2];
  function joins(a, b) {
    if (a[0] === b[0]) return Math.abs(a[1] - b[1]) + Math.abs(a[2] - b[2]) === 1;
    const low = Math.min(a[0], b[0]);
    return Math.abs(a[0] - b[0]) === 1 && a[1] === b[1] && a[2] === b[2] && portals.has(`${low},${low + 1},${a[1]},${a[2]}`);
  }
  function point([layer, r, c]) {
    const [ox, oy] = tools.origins[layer];
    return [ox + (c + 0.5) * tools.cell, oy + (r + 0.5) * tools.cell];
  }
  function redraw() {
    ink.replaceChildren();
    strokes.forEach((stroke, s) => {
      let run = [];
      const flush = () => {
        if (run.length === 1) {
          const [x, y] = point(run[0]);
          ink.append(svg("circle", {cx: x, cy: y, r: tools.line_width / 2, fill: tools.colour}));
        } else if (run.length > 1) {
          ink.append(svg("polyline", {points: run.map(point).map((p) => p.join(",")).join(" "), fill: "none", stroke: tools.colour,
            "stroke-width": tools.line_width, "stroke-linecap": "square", "stroke-linejoin": "miter"}));
        }
        run = [];
      };
      stroke.forEach((node) => {
        if (run.length && (run[run.length - 1][0] !== node[0])) flush();
        run.push(node);
      });
      flush();
      if (s === active && stroke.length) {
        const [x, y] = point(stroke[stroke.length - 1]);
        ink.append(svg("circle", {cx: x, cy: y, r: tools.cell * 0.42, fill: "none", stroke: "#111", "stroke-width": 1.5, "stroke-dasharray": "3 2"}));
      }
    });
  }
  dragging(overlay, (i, first) => {
    const node = cells[i];
    const stroke = active >= 0 ? strokes[active] : null;
    if (stroke && stroke.length) {
      const last = stroke[stroke.length - 1];
      if (same(last, node)) {
        if (first) stroke.pop();
      } else if (stroke.length >= 2 && same(stroke[stroke.length - 2], node)) {
        stroke.pop();
      } else if (joins(last, node)) {
        stroke.push(node);
      } else if (first) {
        strokes.push([node]);
        active = strokes.length - 1;
      }
      if (!stroke.length) { strokes.splice(active, 1); active = strokes.length - 1; }
    } else if (first) {
      strokes.push([node]);
      active = strokes.length - 1;
    }
    redraw();
  });
  panel.append(el("h3", {text: "Route"}),
    el("div", {class: "row"},
      el("button", {type: "button", text: "Undo", onclick: () => {
        if (active < 0) active = strokes.length - 1;
        if (active < 0) return;
        strokes[active].pop();
        if (!strokes[active].length) { strokes.splice(active, 1); active = strokes.length - 1; }
        redraw();
      }}),
      el("button", {type: "button", text: "New line", onclick: () => { active = -1; redraw(); }}),
      el("button", {type: "button", text: "Clear", onclick: () => { strokes.length = 0; active = -1; redraw(); }})));
  return () => (strokes.length ? {strokes} : "Draw the route before submitting.");
}

function selectTool(tools, overlay, panel) {
  let selected = null;
  const frames = svg("g", {"pointer-events": "none"});
  const targets = svg("g");
  tools.targets.forEach((t, i) => {
    const hit = shapeFor(t, {class: "target", "data-index": i, fill: "#000", "fill-opacity": 0});
    hit.addEventListener("click", () => { selected = selected === i ? null : i; redraw(); });
    targets.append(hit);
  });
  function redraw() {
    frames.replaceChildren();
    if (selected === null) return;
    const t = tools.targets[selected];
    frames.append(svg("rect", {x: t.x, y: t.y, width: t.w, height: t.h, rx: t.w * 0.1, fill: "none", stroke: tools.colour, "stroke-width": tools.line_width}));
  }
  overlay.append(targets, frames);
  panel.append(el("h3", {text: "Your choice"}), el("p", {class: "help", text: "The framed diagram is your answer."}));
  return () => (selected === null ? "Frame a diagram before submitting." : {selected: [selected]});
}

function voxelTool(tools, overlay, panel) {
  const n = tools.size;
  const heights = Array.from({length: n}, () => new Array(n).fill(0));
  const S = Math.sqrt(3) / 2;
  const [ox, oy] = tools.origin;
  const u = tools.unit;
  let removing = false;
  const at = (x, y, z) => [ox + (x - y) * S * u, oy + ((x + y) / 2 - z) * u];
  const poly = (pts) => pts.map((p) => p.join(",")).join(" ");
  const scene = svg("g");
  const hover = svg("g", {"pointer-events": "none"});
  overlay.append(scene, hover);
  const gridButtons = [];
  function change(x, y, remove) {
    heights[y][x] = Math.max(0, Math.min(n, heights[y][x] + (remove ? -1 : 1)));
    redraw();
  }
  function redraw() {
    scene.replaceChildren();
    // The floor (drawn in the puzzle) is covered with transparent cells to click on.
    for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) {
      const cell = svg("polygon", {points: poly([at(x, y, 0), at(x + 1, y, 0), at(x + 1, y + 1, 0), at(x, y + 1, 0)]),
        class: "cellhit", "data-x": x, "data-y": y});
      scene.append(cell);
    }
    const order = [];
    for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) order.push([x, y]);
    order.sort((a, b) => (a[0] + a[1]) - (b[0] + b[1]));  // back to front: nearer columns cover farther ones
    for (const [x, y] of order) {
      for (let z = 0; z < heights[y][x]; z++) {
        const faces = [
          ["top", [at(x, y, z + 1), at(x + 1, y, z + 1), at(x + 1, y + 1, z + 1), at(x, y + 1, z + 1)]],
          ["left", [at(x, y + 1, z), at(x + 1, y + 1, z), at(x + 1, y + 1, z + 1), at(x, y + 1, z + 1)]],
          ["right", [at(x + 1, y, z), at(x + 1, y + 1, z), at(x + 1, y + 1, z + 1), at(x + 1, y, z + 1)]],
        ];
        for (const [key, pts] of faces) {
          scene.append(svg("polygon", {points: poly(pts), fill: tools.colours[key], stroke: tools.colours.line, "stroke-width": Math.max(1, 0.06 * u),
            "stroke-linejoin": "round", class: "target", "data-x": x, "data-y": y}));
        }
      }
    }
    gridButtons.forEach(([x, y, b]) => { b.textContent = String(heights[y][x]); b.classList.toggle("zero", heights[y][x] === 0); });
  }
  scene.addEventListener("click", (event) => {
    const d = event.target.dataset;
    if (d.x === undefined) return;
    change(Number(d.x), Number(d.y), removing || event.shiftKey);
  });
  function highlight(x, y) {
    hover.replaceChildren();
    if (x === null) return;
    hover.append(svg("polygon", {points: poly([at(x, y, 0), at(x + 1, y, 0), at(x + 1, y + 1, 0), at(x, y + 1, 0)]), fill: "none",
      stroke: "#e8590c", "stroke-width": Math.max(1.5, 0.12 * u)}));
  }
  const grid = el("div", {class: "heights"});
  grid.style.gridTemplateColumns = `repeat(${n}, 1fr)`;
  for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) {
    const b = el("button", {type: "button", "data-x": x, "data-y": y, title: `column ${x + 1} from the left, ${y + 1} from the back`,
      onclick: (event) => change(x, y, removing || event.shiftKey),
      oncontextmenu: (event) => { event.preventDefault(); change(x, y, true); },
      onmouseenter: () => highlight(x, y), onmouseleave: () => highlight(null)});
    gridButtons.push([x, y, b]);
    grid.append(b);
  }
  const add = el("button", {type: "button", class: "chosen", text: "Add", onclick: () => mode(false)});
  const remove = el("button", {type: "button", text: "Remove", onclick: () => mode(true)});
  function mode(value) {
    removing = value;
    add.classList.toggle("chosen", !value);
    remove.classList.toggle("chosen", value);
  }
  panel.append(el("h3", {text: "Cubes"}), el("div", {class: "row"}, add, remove,
    el("button", {type: "button", text: "Clear", onclick: () => { heights.forEach((row) => row.fill(0)); redraw(); }})),
    el("h3", {text: "Column heights, seen from above"}), el("div", {class: "axis", text: "back"}), grid,
    el("div", {class: "axis", text: "front (nearest to you)"}));
  redraw();
  return () => (heights.some((row) => row.some((h) => h > 0)) ? {heights} : "Build the solid before submitting.");
}

function panelTool(tools, overlay, panel) {
  const choice = {type: null, size: null, colour: null, rotation: 0, positions: tools.slots.length === 1 ? [0] : []};
  const [px, py] = tools.panel;
  const drawn = svg("g", {"pointer-events": "none"});
  const slots = svg("g");
  tools.slots.forEach(([sx, sy], i) => {
    const h = tools.slot_half;
    const hit = svg("rect", {class: "cellhit", "data-slot": i, x: px + sx - h, y: py + sy - h, width: 2 * h, height: 2 * h});
    hit.addEventListener("click", () => {
      const at = choice.positions.indexOf(i);
      if (at >= 0) choice.positions.splice(at, 1); else choice.positions.push(i);
      redraw();
    });
    slots.append(hit);
  });
  overlay.append(drawn, slots);
  function shape(type, rotation, x, y, r, fill) {
    const turns = tools.shapes[type].turns[rotation];
    return turns === null ? svg("circle", {cx: x, cy: y, r, fill}) : svg("path", {d: glyphPath(turns, x, y, r), fill});
  }
  const groups = {};
  function redraw() {
    drawn.replaceChildren();
    const ready = choice.type !== null && choice.size !== null && choice.colour !== null;
    tools.slots.forEach(([sx, sy], i) => {
      const h = tools.slot_half;
      if (choice.positions.includes(i) && ready) {
        drawn.append(shape(choice.type, choice.rotation, px + sx, py + sy, tools.sizes[choice.size] * h, tools.fills[choice.colour]));
      } else if (choice.positions.includes(i)) {
        drawn.append(svg("circle", {cx: px + sx, cy: py + sy, r: h * 0.25, fill: "#2f6fd6"}));
      } else {
        drawn.append(svg("rect", {x: px + sx - h * 0.9, y: py + sy - h * 0.9, width: h * 1.8, height: h * 1.8, fill: "none",
          stroke: "#c3c9d2", "stroke-dasharray": "3 3", "stroke-width": 1}));
      }
    });
    for (const [key, list] of Object.entries(groups)) list.forEach(([v, b]) => b.classList.toggle("chosen", choice[key] === v));
    // Turns show the chosen shape, or a triangle while the shape looks the same at every turn.
    const turning = choice.type !== null && distinctTurns(choice.type) ? choice.type : triangle;
    groups.rotation.forEach(([v, b]) => b.replaceChildren(icon(turning, v, 0.7, "#444")));
    turnNote.hidden = choice.type === null || distinctTurns(choice.type);
  }
  function distinctTurns(type) {
    const turns = tools.shapes[type].turns;
    return turns[0] !== null && !sameOutline(turns[0], turns[1]);
  }
  function sameOutline(a, b) {
    // A square turned a quarter turn has the same corners in another order.
    const key = (pts) => pts.map(([x, y]) => `${Math.round(x * 100)},${Math.round(y * 100)}`).sort().join(" ");
    return key(a) === key(b);
  }
  function icon(type, rotation, r, fill) {
    const box = svg("svg", {viewBox: "-1 -1 2 2", width: 28, height: 28});
    box.append(shape(type, rotation, 0, 0, r, fill));
    return box;
  }
  function group(key, values, make) {
    groups[key] = values.map((v) => [v, el("button", {type: "button", class: "swatch", "data-attr": key, "data-value": v,
      onclick: () => { choice[key] = v; redraw(); }}, make(v))]);
    return el("div", {class: "row"}, groups[key].map(([, b]) => b));
  }
  const range = (k) => Array.from({length: k}, (_, i) => i);
  const byName = (name, fallback) => Math.max(fallback, tools.shapes.findIndex((t) => t.name === name));
  const triangle = byName("triangle", 0);
  const circle = byName("circle", 0);
  const turnNote = el("p", {class: "help", text: "This shape looks the same at every turn: any turn will do."});
  panel.append(
    el("h3", {text: "Shape"}), group("type", range(tools.shapes.length), (v) => icon(v, 0, 0.8, "#444")),
    el("h3", {text: "Size"}), group("size", range(tools.sizes.length), (v) => icon(circle, 0, tools.sizes[v], "#444")),
    el("h3", {text: "Shade"}), group("colour", range(tools.fills.length), (v) => {
      const chip = el("span", {class: "chip"}); chip.style.background = tools.fills[v]; return chip;
    }),
    el("h3", {text: "Turn (quarter turns clockwise)"}), group("rotation", range(tools.rotations), (v) => icon(triangle, v, 0.7, "#444")),
    turnNote,
    el("p", {class: "help", text: "Click the slots of the missing panel to place or remove objects."}));
  redraw();
  return () => {
    if (choice.type === null || choice.size === null || choice.colour === null) return "Choose a shape, a size and a shade first.";
    return {...choice, positions: choice.positions.slice().sort((a, b) => a - b)};
  };
}

function uploadItem(it, panel, submit, status) {
  let data = null;
  const preview = el("div", {class: "upload"});
  const input = el("input", {type: "file", accept: "image/png,image/jpeg,image/webp", onchange: () => {
    const file = input.files[0];
    if (!file) return;
    const reader = new FileReader();
    reader.onload = () => {
      data = String(reader.result).split(",")[1];
      preview.replaceChildren(el("img", {src: reader.result, alt: "your answer"}));
    };
    reader.readAsDataURL(file);
  }});
  panel.append(el("h3", {text: "Task"}), el("p", {class: "help", text: state.block.what}),
    el("h3", {text: "The puzzle picture"}), el("a", {href: it.puzzle, download: `${it.task}-puzzle.png`, text: "Download it to draw on"}),
    el("h3", {text: "Your answer"}), input, preview, el("h3", {text: "How"}), el("p", {class: "help", text: state.block.how}),
    el("div", {class: "actions"}, submit, status));
  submit.addEventListener("click", submitter(submit, status, () => {
    if (data === null) { notice("Choose an image file first."); return null; }
    return {upload: data};
  }));
  main.replaceChildren(el("div", {class: "draw"}, el("div", {class: "stage"}, el("img", {src: it.puzzle, alt: "the puzzle"})), panel));
}

// ------------------------------------------------------------------ cfeval-rate

function choices(values, labels, onpick) {
  const buttons = values.map((v, k) => el("button", {type: "button", "data-value": JSON.stringify(v), text: labels[k],
    onclick: () => { buttons.forEach((b) => b.classList.remove("chosen")); buttons[k].classList.add("chosen"); onpick(v); }}));
  return el("div", {class: "row"}, buttons);
}

function rateItem(it) {
  const scores = it.questions.map(() => undefined);
  const status = el("span", {class: "status"});
  const submit = el("button", {class: "primary", id: "submit", type: "button", text: "Submit ratings"});
  const list = el("div", {class: "questions card"});
  it.questions.forEach((q, i) => list.append(el("div", {class: "q", "data-question": i},
    el("p", {}, el("strong", {text: `${i + 1}. `}), q.question),
    q.criteria ? el("p", {class: "criteria", text: `Criteria: ${q.criteria}`}) : null,
    choices([0, 0.5, 1, null], ["0 · fails", "0.5 · partly", "1 · meets", "Cannot tell"], (v) => { scores[i] = v; }))));
  list.append(el("div", {class: "actions"}, submit, status));
  submit.addEventListener("click", submitter(submit, status, () => {
    const missing = scores.findIndex((s) => s === undefined);
    if (missing >= 0) { notice(`Question ${missing + 1} has no score yet.`); return null; }
    return {scores};
  }));
  main.replaceChildren(el("div", {class: "rate"}, el("div", {class: "picture"}, el("img", {src: it.image, alt: "the generated picture"})), list));
}

// ------------------------------------------------------------------ drift-rate

function driftItem(it) {
  const k = it.candidates.length;
  const ratings = new Array(k).fill(undefined);
  const ranks = new Array(k).fill(null);
  const status = el("span", {class: "status"});
  const submit = el("button", {class: "primary", id: "submit", type: "button", text: "Submit ratings"});
  const source = el("div", {class: "source"}, el("strong", {text: it.source_kind === "I2T" ? "The source picture" : "The source description"}));
  if (it.source_image) source.append(el("img", {src: it.source_image, alt: "the source picture"}));
  else source.append(el("blockquote", {text: it.source_text}));
  const cards = it.candidates.map((c, i) => {
    const select = el("select", {"data-rank": i, onchange: () => { ranks[i] = select.value ? Number(select.value) : null; }},
      el("option", {value: "", text: "rank…"}), Array.from({length: k}, (_, r) => el("option", {value: r + 1, text: `${r + 1}${r === 0 ? " (best)" : ""}`})));
    return el("div", {class: "candidate", "data-candidate": i},
      el("strong", {text: `Output ${i + 1}`}),
      el("div", {class: "output"}, c.image ? el("img", {src: c.image, alt: `output ${i + 1}`}) : el("p", {text: c.text})),
      choices(["good", "medium", "poor"], ["Good", "Medium", "Poor"], (v) => { ratings[i] = v; }),
      el("label", {}, "Rank ", select));
  });
  submit.addEventListener("click", submitter(submit, status, () => {
    const unrated = ratings.findIndex((r) => r === undefined);
    if (unrated >= 0) { notice(`Output ${unrated + 1} has no rating yet.`); return null; }
    if (ranks.some((r) => r === null) || new Set(ranks).size !== k) { notice(`Give each output a different rank from 1 to ${k}.`); return null; }
    return {ratings, ranks};
  }));
  main.replaceChildren(source, el("div", {class: "candidates"}, cards), el("div", {class: "actions"}, submit, status));
}

load();
