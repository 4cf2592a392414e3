// regionbench view: the pages of a release's static site. The data files call RB.load; a page
// reads them as <script>s, which a browser allows from file:// where it refuses a fetch.
"use strict";
const RB = {
  data: {},
  load(kind, value) { this.data[kind] = value; },

  script(src) {
    return new Promise((resolve, reject) => {
      const tag = document.createElement("script");
      tag.src = src;
      tag.onload = resolve;
      tag.onerror = () => reject(new Error("cannot read " + src + ": is the site complete?"));
      document.head.appendChild(tag);
    });
  },

  byId(a, b) {
    // image ids are decimal strings (past 2^53 a number would round): shorter first, then by digits
    return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  },

  missing(id, meta) {
    // an id the release does not have: one clear line, not a blank page
    document.title = "no such image";
    document.getElementById("title").textContent = "no such image";
    document.getElementById("about").textContent =
      `${meta.dataset} v${meta.version} has no image ${JSON.stringify(id)}; choose one from all images`;
    document.body.dataset.missing = "yes";
  },

  element(name, attributes = {}, text = "") {
    const node = document.createElement(name);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
    if (text !== "") node.textContent = text;
    return node;
  },

  options(select, values) {
    for (const [value, text] of values) select.appendChild(RB.element("option", { value }, text));
  },

  chosen() {
    // the index's filters and sort, as the address gives them (an image page keeps them)
    const chosen = { label: "", annotator: "", subset: "", split: "", audit: "", error: "", cell: "", sort: "id" };
    const params = new URLSearchParams(location.search);
    for (const key of Object.keys(chosen)) chosen[key] = params.get(key) || chosen[key];
    return chosen;
  },

  query(chosen, extra = {}) {
    // the address part of the filters and sort that are set, and ``extra``
    const params = new URLSearchParams(extra);
    for (const [key, value] of Object.entries(chosen)) if (value !== "" && !(key === "sort" && value === "id")) params.set(key, value);
    return params.toString();
  },

  filter(entries, chosen) {
    // the index entries the filters keep, in the chosen order
    let found = entries.filter(([, labels, annotators, subsets, split, , , audit, cells, errors]) =>
      (chosen.label === "" || labels.includes(Number(chosen.label))) &&
      (chosen.annotator === "" || annotators.includes(Number(chosen.annotator))) &&
      (chosen.subset === "" || subsets.includes(chosen.subset)) &&
      (chosen.split === "" || split === chosen.split) &&
      (chosen.audit === "" || (audit || "").includes(chosen.audit)) &&
      (chosen.cell === "" || (cells || []).includes(Number(chosen.cell))) &&
      (chosen.error === "" || (errors || []).includes(chosen.error)));
    const column = { agreement: 5, score: 6 }[chosen.sort];
    if (column !== undefined) {
      // the worst first; images without the figure last, in id order
      found = found.slice().sort((a, b) => {
        const x = a[column], y = b[column];
        if (x === null && y === null) return RB.byId(a[0], b[0]);
        if (x === null) return 1;
        if (y === null) return -1;
        return x - y || RB.byId(a[0], b[0]);
      });
    }
    return found;
  },

  remember(chosen) {
    // the filters in the address: a reload, the back button and an image's previous/next keep them
    history.replaceState(null, "", `?${RB.query(chosen)}`);
  },

  keys(actions) {
    // keyboard shortcuts, not while typing in a field
    document.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey || /INPUT|SELECT|TEXTAREA/.test(event.target.tagName)) return;
      const action = actions[event.key];
      if (action) { event.preventDefault(); action(); }
    });
  },

  async cellNote(chosen) {
    // the index filtered to the images of one confusion cell of the run's page
    await RB.script("data/run.js");
    const cells = RB.data.run.confusion ? RB.data.run.confusion.cells : [];
    const cell = cells.find((c) => c[3] === Number(chosen.cell));
    const note = document.getElementById("cell-note");
    note.hidden = false;
    const labels = RB.data.run.confusion ? RB.data.run.confusion.labels : [];
    note.textContent = cell ? `images where the run says ${labels[cell[1]]} of ${labels[cell[0]]} ` : "no such confusion ";
    const all = RB.element("a", { href: `index.html?${RB.query({ ...chosen, cell: "" })}` }, "(every image)");
    note.appendChild(all);
  },

  async entries(meta, each = () => {}) {
    // every index entry, part by part (``each`` after each part)
    const entries = [];
    for (let part = 0; part < meta.index_parts; part += 1) {
      await RB.script(`data/index/${part}.js`);
      for (const entry of RB.data.index) entries.push(entry);
      each(entries, part + 1);
    }
    return entries;
  },

  async index() {
    await RB.script("data/meta.js");
    const meta = RB.data.meta;
    let entries = [];
    let parts = 0; // index files read: the first page is drawn from the first, the rest follow
    document.title = `${meta.dataset} v${meta.version}`;
    document.getElementById("title").textContent = `${meta.dataset} v${meta.version}`;
    document.getElementById("digest").textContent = meta.digest ? `digest sha256:${meta.digest}` : "";
    const chosen = RB.chosen();
    RB.options(document.getElementById("label"), meta.labels.map((l, k) => [String(k), `${l.name} (${l.regions})`]));
    RB.options(document.getElementById("annotator"), meta.annotators.map((a, k) => [String(k), a]));
    RB.options(document.getElementById("subset"), meta.subsets.map((s) => [s, s]));
    RB.options(document.getElementById("split"), meta.splits.map((s) => [s, s]));
    // a filter or a sort that could select nothing is not offered: one annotator has no
    // agreement to sort by, a release without a run no score
    const offered = { label: meta.labels.length, annotator: meta.annotators.length, subset: meta.subsets.length, split: meta.splits.length };
    for (const [key, count] of Object.entries(offered)) document.getElementById(key).closest("label").hidden = count < 2;
    document.querySelector('#sort option[value="score"]').hidden = !meta.run;
    document.querySelector('#sort option[value="agreement"]').hidden = !meta.agreement;
    // the audit filter, and each of its choices, only where the release's audits found something
    document.getElementById("audit-filter").hidden = !(meta.audits && (meta.audits.d || meta.audits.l));
    // the error filter: the TIDE types the run's detections have, where the site draws a run
    const errors = meta.errors || [];
    const outcomes = (meta.run && meta.run.outcomes) || {};
    RB.options(document.getElementById("error"), errors.map((e) => [e, `${e}: ${outcomes[e === "Miss" ? "missed" : e] || e}`]));
    document.getElementById("error-filter").hidden = !errors.length;
    for (const kind of ["d", "l"]) {
      document.querySelector(`#audit option[value="${kind}"]`).hidden = !(meta.audits && meta.audits[kind]);
    }
    let page = 0;
    const shown = () => RB.filter(entries, chosen);
    const draw = () => {
      const found = shown();
      const pages = Math.max(1, Math.ceil(found.length / meta.page));
      page = Math.min(page, pages - 1);
      const reading = parts < meta.index_parts ? ` (reading the index, ${parts} of ${meta.index_parts} parts)` : "";
      document.getElementById("count").textContent = `${found.length} of ${entries.length} images${reading}`;
      document.getElementById("page").textContent = `page ${page + 1} of ${pages}`;
      document.getElementById("previous").disabled = page === 0;
      document.getElementById("next").disabled = page >= pages - 1;
      const grid = document.getElementById("grid");
      grid.replaceChildren();
      for (const [id, labels, , , split, agreement, score] of found.slice(page * meta.page, (page + 1) * meta.page)) {
        const tile = RB.element("a", { class: "tile", href: `image.html?${RB.query(chosen, { id })}`, "data-id": String(id) });
        tile.appendChild(RB.element("img", { src: `thumb/${id}.jpg`, alt: `image ${id}`, loading: "lazy" }));
        const facts = [`${id}`, split || ""];
        if (agreement !== null) facts.push(`agreement ${agreement.toFixed(3)}`);
        if (score !== null) facts.push(`score ${score.toFixed(3)}`);
        tile.appendChild(RB.element("span", {}, facts.filter(Boolean).join(" · ")));
        tile.appendChild(RB.element("span", {}, labels.map((k) => meta.labels[k].name).join(", ")));
        grid.appendChild(tile);
      }
    };
    for (const key of Object.keys(chosen)) {
      const select = document.getElementById(key);
      if (!select) continue; // a confusion cell is chosen on the run's page
      select.value = chosen[key];
      select.addEventListener("change", () => {
        chosen[key] = select.value;
        page = 0;
        RB.remember(chosen);
        draw();
      });
    }
    const previous = document.getElementById("previous"), next = document.getElementById("next");
    previous.addEventListener("click", () => { page -= 1; draw(); });
    next.addEventListener("click", () => { page += 1; draw(); });
    RB.keys({ ArrowLeft: () => previous.disabled || previous.click(), ArrowRight: () => next.disabled || next.click() });
    if (meta.run) document.getElementById("evaluation").hidden = false;
    if (chosen.cell !== "") RB.cellNote(chosen);
    RB.card(meta);
    await RB.entries(meta, (all, read) => { entries = all; parts = read; draw(); });
    if (!meta.index_parts) draw();
    document.body.dataset.indexed = "all";
  },

  card(meta) {
    const table = document.getElementById("figures");
    const figures = { ...(meta.figures.agreement || {}), ...(meta.figures.concepts || {}) };
    for (const [name, value] of Object.entries(figures)) {
      const row = table.insertRow();
      row.insertCell().textContent = name.replace(/_/g, " ");
      row.insertCell().textContent = value.toFixed(4);
    }
    const baselines = meta.figures.baselines;
    if (baselines) {
      // the reference methods' figures, the humans' ceiling first: the card's table
      const methods = document.getElementById("baselines");
      methods.hidden = false;
      const head = methods.createTHead().insertRow();
      for (const name of baselines.header) head.appendChild(RB.element("th", {}, name));
      const body = methods.createTBody();
      for (const values of baselines.rows) {
        const row = body.insertRow();
        for (const value of values) row.insertCell().textContent = typeof value === "number" ? value.toFixed(4) : value;
      }
    }
    const charts = document.getElementById("charts");
    for (const name of meta.charts) charts.appendChild(RB.element("img", { src: `charts/${name}`, alt: name }));
  },

  audit(image) {
    // what the release's audits say of this image: its near-copies, its label-error candidates
    const found = image.audit || {};
    const list = document.getElementById("audit");
    if (found.copies && found.copies.length) {
      const item = RB.element("li", {}, "near-copies: ");
      for (const other of found.copies) {
        item.appendChild(RB.element("a", { href: `image.html?id=${other.id}` }, `image ${other.id}`));
        item.appendChild(document.createTextNode(` (${other.distance} bits${other.split ? ", " + other.split : ""}) `));
      }
      list.appendChild(item);
    }
    for (const c of found.candidates || []) {
      const suggested = c.suggested ? ` → ${c.suggested}` : "";
      list.appendChild(RB.element("li", {}, `label-error candidate #${c.rank}: region ${c.region} ${c.label}${suggested} (${c.evidence})`));
    }
    document.getElementById("audit-listing").hidden = !list.children.length;
  },

  async image() {
    const chosen = RB.chosen();
    const id = new URLSearchParams(location.search).get("id") || "";
    await RB.script("data/meta.js");
    const meta = RB.data.meta;
    document.getElementById("back").href = `index.html?${RB.query(chosen)}`;
    if (!/^[0-9]{1,19}$/.test(id)) return RB.missing(id, meta);
    try {
      await RB.script(`data/img/${id}.js`);
    } catch {
      return RB.missing(id, meta);
    }
    const image = RB.data.image;
    document.title = `image ${image.id}`;
    document.getElementById("title").textContent = `image ${image.id}`;
    const about = [`${image.width}×${image.height}`, image.split || "", image.caption || ""];
    if (image.agreement !== null) about.push(`agreement ${image.agreement.toFixed(3)}`);
    if (image.score !== null) about.push(`run score ${image.score.toFixed(3)}`);
    document.getElementById("about").textContent = about.filter(Boolean).join(" · ");
    document.getElementById("picture").src = image.src;
    RB.audit(image);
    RB.run(image);
    const svg = document.getElementById("outlines");
    svg.setAttribute("viewBox", `0 0 ${image.width} ${image.height}`);
    const layers = document.getElementById("layers");
    const listing = document.getElementById("regions");
    const header = listing.insertRow();
    const perRegion = image.predicted && !Array.isArray(image.predicted) ? image.predicted : null;
    const columns = ["annotator", "region", "label", "area (px)"].concat(perRegion ? ["the run's label"] : []);
    for (const name of columns) header.appendChild(RB.element("th", {}, name));
    for (const [layer, [annotator, regions]] of Object.entries(image.layers).entries()) {
      const group = document.createElementNS("http://www.w3.org/2000/svg", "g");
      group.setAttribute("data-annotator", annotator);
      // one annotator's regions filled, the others' outlined: layers over each other stay legible
      if (layer > 0) group.classList.add("outline");
      RB.toggle(layers, group, annotator, ` ${annotator} (${regions.length})`);
      const named = Object.fromEntries(regions.map((r) => [r.id, r.label]));
      for (const region of regions) {
        const row = listing.insertRow();
        row.insertCell().textContent = annotator;
        row.insertCell().textContent = String(region.id);
        const cell = row.insertCell();
        cell.appendChild(RB.element("span", { class: "swatch", style: `background:${region.colour}` }));
        cell.append(region.label + (region.crowd ? " (crowd)" : "") + (region.stuff ? " (stuff)" : ""));
        row.insertCell().textContent = region.area === null ? "" : String(region.area);
        if (perRegion) {
          const said = perRegion[`${annotator}/${region.id}`];
          const cell = row.insertCell();
          cell.textContent = said === undefined ? "" : said;
          if (said !== undefined) cell.className = said === region.label ? "right" : "wrong";
        }
        if (!region.path) continue; // a region released without a mask: listed, not drawn
        const path = RB.path(region.path, region.colour, { "data-region": `${annotator}/${region.id}` });
        if (region.stuff) path.setAttribute("class", "stuff"); // stuff apart from things: a panoptic truth
        RB.pointed(svg, path, () => RB.describe(annotator, region, named));
        group.appendChild(path);
      }
      svg.appendChild(group);
    }
    if (image.drawn) RB.predictions(image.drawn, svg, layers);
    RB.zoom(image);
    RB.neighbours(meta, chosen, image.id);
  },

  path(d, colour, attributes = {}) {
    const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
    path.setAttribute("d", d);
    path.setAttribute("fill", colour);
    path.setAttribute("stroke", colour);
    path.setAttribute("fill-rule", "evenodd");
    for (const [key, value] of Object.entries(attributes)) path.setAttribute(key, value);
    return path;
  },

  pointed(svg, path, show) {
    // pointing at a shape (or clicking it) chooses it and shows what it is
    const choose = () => {
      svg.querySelectorAll("path.chosen").forEach((p) => p.classList.remove("chosen"));
      path.classList.add("chosen");
      show();
    };
    path.addEventListener("mouseenter", choose);
    path.addEventListener("click", choose);
  },

  toggle(layers, group, name, text, extra = []) {
    // a layer's check box: shows or hides its group
    const box = RB.element("input", { type: "checkbox", "data-annotator": name });
    box.checked = true;
    box.addEventListener("change", () => { group.style.display = box.checked ? "" : "none"; });
    const label = RB.element("label");
    label.append(box, text, ...extra);
    layers.appendChild(label);
  },

  zoom(image) {
    // zoom with the wheel (at the pointer), + and -, pan by dragging; 0 fits the image again
    const viewport = document.getElementById("viewport"), stage = document.getElementById("stage");
    const view = { scale: 1, x: 0, y: 0 };
    const apply = () => {
      view.scale = Math.min(16, Math.max(1, view.scale));
      const w = stage.offsetWidth, h = stage.offsetHeight;
      view.x = Math.min(0, Math.max(w - w * view.scale, view.x));
      view.y = Math.min(0, Math.max(h - h * view.scale, view.y));
      stage.style.transform = `translate(${view.x}px, ${view.y}px) scale(${view.scale})`;
      document.getElementById("zoom-level").textContent = `${Math.round(view.scale * 100)}%`;
      viewport.dataset.scale = String(view.scale);
    };
    const at = (factor, cx = stage.offsetWidth / 2, cy = stage.offsetHeight / 2) => {
      view.x = cx - (cx - view.x) * factor;
      view.y = cy - (cy - view.y) * factor;
      view.scale *= factor;
      apply();
    };
    const fit = () => { view.scale = 1; view.x = 0; view.y = 0; apply(); };
    viewport.addEventListener("wheel", (event) => {
      event.preventDefault();
      const box = viewport.getBoundingClientRect();
      at(event.deltaY < 0 ? 1.25 : 0.8, event.clientX - box.left, event.clientY - box.top);
    }, { passive: false });
    let drag = null;
    viewport.addEventListener("pointerdown", (event) => { if (view.scale > 1) drag = [event.clientX - view.x, event.clientY - view.y]; });
    window.addEventListener("pointerup", () => { drag = null; });
    viewport.addEventListener("pointermove", (event) => {
      if (!drag) return;
      view.x = event.clientX - drag[0];
      view.y = event.clientY - drag[1];
      apply();
    });
    document.getElementById("zoom-in").addEventListener("click", () => at(1.25));
    document.getElementById("zoom-out").addEventListener("click", () => at(0.8));
    document.getElementById("zoom-fit").addEventListener("click", fit);
    RB.zoomKeys = { "+": () => at(1.25), "=": () => at(1.25), "-": () => at(0.8), 0: fit };
    apply();
  },

  async neighbours(meta, chosen, id) {
    // previous and next in the index's order under its filters (the address keeps them)
    const back = document.getElementById("back");
    const actions = { ...RB.zoomKeys, Escape: () => back.click() };
    RB.keys(actions);
    const entries = RB.filter(await RB.entries(meta), chosen);
    const at = entries.findIndex((e) => e[0] === id);
    const place = document.getElementById("place");
    place.textContent = at < 0 ? "not among the images chosen" : `${at + 1} of ${entries.length}`;
    for (const [name, step, key] of [["previous", -1, "ArrowLeft"], ["next", 1, "ArrowRight"]]) {
      const link = document.getElementById(name);
      const other = at < 0 ? undefined : entries[at + step];
      if (!other) continue;
      link.href = `image.html?${RB.query(chosen, { id: other[0] })}`;
      link.removeAttribute("aria-disabled");
      actions[key] = () => link.click();
    }
    document.body.dataset.neighbours = "ready";
  },

  predictions(shapes, svg, layers) {
    // A mask task's run: its shapes as one more layer, on top, dashed; detections below a chosen
    // score hidden (a run gives up to 100 an image, most of them faint). The truth instances
    // no detection took are a layer of their own, drawn and listed.
    const task = RB.data.meta.run.task;
    const named = RB.data.meta.run.outcomes || {};
    const missed = shapes.filter((s) => s.facts.outcome === "missed");
    shapes = shapes.filter((s) => s.facts.outcome !== "missed");
    const group = document.createElementNS("http://www.w3.org/2000/svg", "g");
    group.setAttribute("class", "run");
    group.setAttribute("data-annotator", "the run");
    const count = RB.element("span", { id: "run-count" });
    RB.toggle(layers, group, "the run", ` the run's ${task} `, [count]);
    const listing = document.getElementById("predictions");
    document.getElementById("run-listing").hidden = false;
    const header = listing.insertRow();
    const figures = {
      instances: ["score", "outcome", "iou", "truth", "counted"], segments: ["segment", "area"],
      semantic: ["area", "right", "truth"], panoptic: ["kind", "outcome", "iou", "area"],
    }[task];
    const labelled = task !== "segments"; // a segment has a number, not a label
    const heading = { iou: "IoU", right: "right", truth: task === "instances" ? "most overlapped truth" : "the truth under it", counted: "AP counts it" };
    for (const name of ["#", ...(labelled ? ["label"] : []), ...figures]) header.appendChild(RB.element("th", {}, heading[name] || name));
    const drawn = [];
    shapes.forEach((shape, k) => {
      const row = listing.insertRow();
      row.setAttribute("data-predicted", String(k));
      const number = row.insertCell();
      number.appendChild(RB.element("span", { class: "swatch", style: `background:${shape.colour}` }));
      number.append(String(k + 1));
      if (labelled) row.insertCell().textContent = shape.label === null ? "" : shape.label;
      for (const name of figures) {
        const cell = row.insertCell();
        cell.textContent = RB.fact(name, shape.facts[name], named);
        if (name === "outcome") cell.className = ["matched", "match"].includes(shape.facts.outcome) ? "right" : "wrong";
      }
      if (!shape.path) return; // an empty mask: listed, not drawn
      const path = RB.path(shape.path, shape.colour, { "data-predicted": String(k) });
      if (shape.facts.kind === "stuff") path.setAttribute("class", "stuff");
      RB.pointed(svg, path, () => RB.explain(task, k, shape));
      group.appendChild(path);
      drawn.push([path, row, shape]);
    });
    for (const [path] of drawn.slice().reverse()) group.appendChild(path); // the first listed on top
    svg.appendChild(group);
    if (missed.length) RB.missedTruth(missed, svg, layers);
    const filter = () => {
      const least = task === "instances" ? Number(document.getElementById("min-score").value) : -Infinity;
      let shown = 0;
      for (const [path, row, shape] of drawn) {
        const on = !(shape.facts.score < least);
        path.style.display = on ? "" : "none";
        row.hidden = !on;
        shown += on;
      }
      count.textContent = `(${shown} of ${shapes.length})`;
    };
    if (task === "instances") {
      const slider = RB.element("input", { type: "range", id: "min-score", min: "0", max: "1", step: "0.05", value: "0.5" });
      const value = RB.element("span", {}, "0.50");
      slider.addEventListener("input", () => { value.textContent = Number(slider.value).toFixed(2); filter(); });
      const line = RB.element("label");
      line.append("score at least ", slider, " ", value);
      layers.appendChild(line);
    }
    filter();
  },

  fact(name, value, named) {
    // a figure of a shape as its table shows it
    if (value === null || value === undefined) return "";
    if (name === "outcome") return named[value] ? `${named[value]}${/^[A-Z]/.test(value) ? ` (${value})` : ""}` : String(value);
    if (name === "truth" && typeof value === "object") {
      const total = Object.values(value).reduce((a, b) => a + b, 0);
      return Object.entries(value).sort((a, b) => b[1] - a[1]).slice(0, 3)
        .map(([label, n]) => `${label} ${Math.round((100 * n) / total)}%`).join(", ");
    }
    return String(value);
  },

  missedTruth(missed, svg, layers) {
    // the truth instances no detection took at IoU 0.5: outlined on top, listed
    const group = document.createElementNS("http://www.w3.org/2000/svg", "g");
    group.setAttribute("class", "missed");
    group.setAttribute("data-annotator", "missed");
    RB.toggle(layers, group, "missed", ` missed truth (${missed.length})`);
    const list = document.getElementById("missed");
    document.getElementById("missed-listing").hidden = false;
    for (const shape of missed) {
      const item = RB.element("li", { "data-region": String(shape.facts.region) });
      item.appendChild(RB.element("span", { class: "swatch", style: `background:${shape.colour}` }));
      item.append(`${shape.label}, region ${shape.facts.region}: no detection took it at IoU 0.5`);
      list.appendChild(item);
      if (!shape.path) continue;
      const path = RB.path(shape.path, shape.colour, { "data-missed": String(shape.facts.region) });
      RB.pointed(svg, path, () => {
        const panel = document.getElementById("region");
        panel.replaceChildren(RB.element("h2", {}, `${shape.label} (region ${shape.facts.region}, missed)`),
          RB.element("p", { class: "wrong" }, "a truth instance no detection took at IoU 0.5: it lowers recall"));
      });
      group.appendChild(path);
    }
    svg.appendChild(group);
  },

  explain(task, k, shape) {
    const panel = document.getElementById("region");
    panel.replaceChildren();
    const name = shape.label === null ? `segment ${shape.facts.segment}` : shape.label;
    panel.appendChild(RB.element("h2", {}, `${name} (the run, ${task} ${k + 1})`));
    const near = shape.facts.truth ? ` (${shape.facts.truth}, IoU ${shape.facts.iou})` : "";
    const said = (task === "panoptic" ? {
      matched: "matched a truth segment of its label at IoU > 0.5",
      unmatched: "matched no truth segment: a false positive",
      "left out": "lies mostly on VOID and crowds of its label: not counted",
    } : {
      match: `took an instance of its label at IoU ≥ 0.5${near}`,
      Cls: `right place, wrong label: it lies on an instance of another label at IoU ≥ 0.5${near} (TIDE: Cls)`,
      Loc: `poorly placed: on an instance of its label, IoU 0.1 to 0.5${near} (TIDE: Loc)`,
      Both: `wrong label and poorly placed${near} (TIDE: Both)`,
      Dupe: `a duplicate of a better-scored detection of the same instance${near} (TIDE: Dupe)`,
      Bkg: `background: on no instance (IoU at most 0.1)${near} (TIDE: Bkg)`,
      ignored: "lies on a crowd region of its label: not counted",
      unmatched: `took no instance of its label${near}: a false positive`,
      crowd: "lies on a crowd region: not counted",
      dropped: "beyond the detections scored per image",
    })[shape.facts.outcome];
    if (said) panel.appendChild(RB.element("p", { class: ["matched", "match"].includes(shape.facts.outcome) ? "right" : "wrong" }, said));
    const table = RB.element("table", { class: "features" });
    const named = RB.data.meta.run.outcomes || {};
    for (const [name, value] of Object.entries(shape.facts)) {
      const row = table.insertRow();
      row.insertCell().textContent = { iou: "IoU (any truth)", right: "share the truth labels so", truth: "the truth", counted: "AP counts it" }[name] || name;
      row.insertCell().textContent = RB.fact(name, value, named);
    }
    panel.appendChild(table);
  },

  run(image) {
    // An image task's run gave the image labels: shown beside the labels its regions carry.
    if (!Array.isArray(image.predicted)) return;
    const truth = new Set(Object.values(image.layers).flat().map((r) => r.label));
    const line = RB.element("p", { id: "run" });
    line.append("the run's labels: ");
    for (const label of image.predicted) {
      line.appendChild(RB.element("span", { class: truth.has(label) ? "right" : "wrong" }, label));
      line.append(" ");
    }
    document.getElementById("about").after(line);
  },

  describe(annotator, region, named = {}) {
    const panel = document.getElementById("region");
    panel.replaceChildren();
    panel.appendChild(RB.element("h2", {}, `${region.label} (${annotator}, region ${region.id})`));
    if (region.hierarchy) panel.appendChild(RB.element("p", { class: "hierarchy" }, region.hierarchy));
    const table = RB.element("table", { class: "features" });
    for (const [name, value] of Object.entries(region.features)) {
      const row = table.insertRow();
      row.insertCell().textContent = name;
      row.insertCell().textContent = value === null ? "" : String(value);
    }
    panel.appendChild(table);
    if (region.relations.length) {
      panel.appendChild(RB.element("h3", {}, "relations"));
      const list = RB.element("ul");
      for (const [other, topological, horizontal, vertical] of region.relations) {
        const name = named[other] ? `${named[other]} (region ${other})` : `region ${other}`;
        list.appendChild(RB.element("li", {}, `${name}: ${[topological, horizontal, vertical].filter(Boolean).join(", ")}`));
      }
      panel.appendChild(list);
    }
  },

  async evaluation() {
    // a scored run's page: headline figures beside the humans', per-class figures (sortable),
    // precision-recall curves, the confusion matrix whose cells open the images they count
    await RB.script("data/meta.js");
    const meta = RB.data.meta;
    if (!meta.run) {
      document.getElementById("about").textContent = `${meta.dataset} v${meta.version}: the site was written without a run (--run)`;
      return;
    }
    await RB.script("data/run.js");
    const run = RB.data.run;
    document.title = `${meta.dataset} v${meta.version}: the run`;
    document.getElementById("title").textContent = `${meta.dataset} v${meta.version}: the run's ${run.task}`;
    const truth = Array.isArray(run.truth) ? run.truth.join(", ") : run.truth;
    document.getElementById("about").textContent = [truth ? `against ${truth}` : "", run.side || "", `${run.images} images scored`].filter(Boolean).join(" · ");
    const headline = document.getElementById("headline");
    const humans = run.headline.some((h) => h[2] !== null);
    const top = headline.insertRow();
    for (const name of ["figure", "the run", ...(humans ? ["humans"] : [])]) top.appendChild(RB.element("th", {}, name));
    for (const [name, value, human, bounds] of run.headline) {
      const row = headline.insertRow();
      row.insertCell().textContent = name.replace(/_/g, " ");
      row.insertCell().textContent = RB.figure(value) + (bounds ? ` [${RB.figure(bounds[0])}, ${RB.figure(bounds[1])}]` : "");
      if (humans) row.insertCell().textContent = RB.figure(human);
    }
    document.getElementById("intervals").textContent = run.intervals || "";
    if (run.compared) {
      document.getElementById("compared-about").textContent = run.compared.about;
      const columns = ["measure", "B - A", "low", "high", "p", "verdict"];
      RB.sortable(document.getElementById("compared"), columns, run.compared.rows);
    }
    document.getElementById("compared-section").hidden = !run.compared;
    for (const name of run.charts) document.getElementById("curves").appendChild(RB.element("img", { src: `charts/${name}`, alt: name }));
    document.getElementById("curves-section").hidden = !run.charts.length;
    if (run.per_class) RB.sortable(document.getElementById("per-class"), ["class", ...run.per_class.columns], run.per_class.rows);
    document.getElementById("per-class-section").hidden = !run.per_class;
    if (run.confusion) RB.confusion(run.confusion);
    document.getElementById("confusion-section").hidden = !run.confusion;
    if (run.tide) RB.tide(run.tide);
    document.getElementById("tide-section").hidden = !run.tide;
  },

  tide(tide) {
    // TIDE's figures: each error type's dAP as a bar, its count, a link to the images that have it
    const said = [`TIDE's AP50 ${RB.figure(tide.ap)}`];
    if (tide.coco_ap50 !== null && tide.coco_ap50 !== tide.ap) said.push(`COCOeval's ${RB.figure(tide.coco_ap50)}`);
    said.push(...tide.special.map(([name, value]) => `${name} ${RB.figure(value)}`));
    document.getElementById("tide-about").textContent = said.join(" · ");
    const table = document.getElementById("tide");
    const head = table.insertRow();
    for (const name of ["error", "dAP", "", "count"]) head.appendChild(RB.element("th", {}, name));
    const most = Math.max(1e-9, ...tide.rows.map((r) => r[1] || 0));
    for (const [kind, dap, count] of tide.rows) {
      const row = table.insertRow();
      row.dataset.error = kind;
      row.insertCell().appendChild(count ? RB.element("a", { href: `index.html?error=${kind}` }, kind) : RB.element("span", {}, kind));
      row.insertCell().textContent = RB.figure(dap);
      const bar = RB.element("div", { class: "bar" });
      bar.style.width = `${Math.round((200 * (dap || 0)) / most)}px`;
      row.insertCell().appendChild(bar);
      row.insertCell().textContent = String(count);
    }
  },

  figure(value) {
    // a report's figure: a count as it is, a measure to four places
    if (value === null || value === undefined) return "";
    return Number.isInteger(value) && Math.abs(value) > 1 ? String(value) : value.toFixed(4);
  },

  sortable(table, columns, rows) {
    // a table sorted by a click on a column's head (again: the other way)
    let by = 1, down = false;
    const draw = () => {
      table.replaceChildren();
      const head = table.insertRow();
      columns.forEach((name, k) => {
        const th = RB.element("th", { "data-column": String(k), class: k === by ? (down ? "down" : "up") : "" }, name || "figure");
        th.addEventListener("click", () => { down = k === by ? !down : k > 0; by = k; draw(); });
        head.appendChild(th);
      });
      const sorted = rows.slice().sort((a, b) => {
        const x = a[by], y = b[by];
        const order = typeof x === "string" ? x.localeCompare(y) : (x === null) - (y === null) || x - y;
        return (down ? -order : order) || a[0].localeCompare(b[0]);
      });
      for (const values of sorted) {
        const row = table.insertRow();
        for (const value of values) row.insertCell().textContent = typeof value === "string" ? value : RB.figure(value);
      }
    };
    draw();
  },

  confusion(found) {
    // the whole matrix for a few classes; past FULL classes the TOP largest confusions
    const FULL = 30, TOP = 40;
    const { labels, cells, unit } = found;
    const link = (cell, text) => cell[3] === null || cell[3] === undefined
      ? RB.element("span", {}, text)
      : RB.element("a", { href: `index.html?cell=${cell[3]}`, "data-cell": String(cell[3]) }, text);
    const place = document.getElementById("confusion");
    document.getElementById("confusion-unit").textContent = unit;
    if (labels.length <= FULL) {
      const table = RB.element("table", { class: "matrix" });
      const head = table.insertRow();
      head.appendChild(RB.element("th", {}, "truth \\ run"));
      for (const name of labels) head.appendChild(RB.element("th", { class: "turned" }, name));
      const rows = labels.map(() => labels.map(() => null));
      for (const cell of cells) rows[cell[0]][cell[1]] = cell;
      const totals = labels.map((_, t) => cells.filter((c) => c[0] === t).reduce((a, c) => a + c[2], 0));
      rows.forEach((row, t) => {
        if (t >= labels.length || !totals[t]) return; // "(none)" is a column, never a row
        const line = table.insertRow();
        line.appendChild(RB.element("th", {}, labels[t]));
        row.forEach((cell, p) => {
          const td = line.insertCell();
          if (!cell) return;
          const share = cell[2] / totals[t];
          td.style.background = `rgba(${t === p ? "34,136,51" : "238,102,119"},${(0.15 + 0.85 * share).toFixed(3)})`;
          td.title = `${labels[t]} → ${labels[p]}: ${cell[2]} ${unit} (${(100 * share).toFixed(1)}% of ${labels[t]})`;
          td.appendChild(t === p ? RB.element("span", {}, String(cell[2])) : link(cell, String(cell[2])));
        });
      });
      place.appendChild(table);
      return;
    }
    const off = cells.filter((c) => c[0] !== c[1]).sort((a, b) => b[2] - a[2] || a[0] - b[0] || a[1] - b[1]).slice(0, TOP);
    const table = RB.element("table", { class: "confusions" });
    const head = table.insertRow();
    for (const name of ["truth", "the run", unit]) head.appendChild(RB.element("th", {}, name));
    for (const cell of off) {
      const row = table.insertRow();
      row.insertCell().textContent = labels[cell[0]];
      row.insertCell().textContent = labels[cell[1]];
      row.insertCell().appendChild(link(cell, String(cell[2])));
    }
    place.appendChild(RB.element("p", {}, `${labels.length} classes: the ${off.length} largest confusions`));
    place.appendChild(table);
  },
};
