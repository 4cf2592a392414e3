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

  async index() {
    await RB.script("data/meta.js");
    const meta = RB.data.meta, entries = [];
    let parts = 0; // index files read: the first page is drawn from the first, the rest follow
    document.title = `${meta.dataset} v${meta.version}`;
    document.getElementById("title").textContent = `${meta.dataset} v${meta.version}`;
    document.getElementById("digest").textContent = meta.digest ? `digest sha256:${meta.digest}` : "";
    const chosen = { label: "", annotator: "", subset: "", split: "", audit: "", sort: "id" };
    const params = new URLSearchParams(location.search);
    for (const key of Object.keys(chosen)) chosen[key] = params.get(key) || chosen[key];
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
    for (const kind of ["d", "l"]) {
      document.querySelector(`#audit option[value="${kind}"]`).hidden = !(meta.audits && meta.audits[kind]);
    }
    let page = 0;
    const shown = () => {
      let found = entries.filter(([, labels, annotators, subsets, split, , , audit]) =>
        (chosen.label === "" || labels.includes(Number(chosen.label))) &&
        (chosen.annotator === "" || annotators.includes(Number(chosen.annotator))) &&
        (chosen.subset === "" || subsets.includes(chosen.subset)) &&
        (chosen.split === "" || split === chosen.split) &&
        (chosen.audit === "" || (audit || "").includes(chosen.audit)));
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
    };
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
        const tile = RB.element("a", { class: "tile", href: `image.html?id=${id}`, "data-id": String(id) });
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
      select.value = chosen[key];
      select.addEventListener("change", () => { chosen[key] = select.value; page = 0; draw(); });
    }
    document.getElementById("previous").addEventListener("click", () => { page -= 1; draw(); });
    document.getElementById("next").addEventListener("click", () => { page += 1; draw(); });
    RB.card(meta);
    for (; parts < meta.index_parts; ) {
      await RB.script(`data/index/${parts}.js`);
      for (const entry of RB.data.index) entries.push(entry);
      parts += 1;
      draw();
    }
    document.body.dataset.indexed = "all";
  },

  card(meta) {
    const table = document.getElementById("figures");
    for (const [name, value] of Object.entries(meta.figures.agreement || {})) {
      const row = table.insertRow();
      row.insertCell().textContent = name.replace(/_/g, " ");
      row.insertCell().textContent = value.toFixed(4);
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
    const id = new URLSearchParams(location.search).get("id") || "";
    await RB.script("data/meta.js");
    if (!/^[0-9]{1,19}$/.test(id)) return RB.missing(id, RB.data.meta);
    try {
      await RB.script(`data/img/${id}.js`);
    } catch {
      return RB.missing(id, RB.data.meta);
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
      const box = RB.element("input", { type: "checkbox", "data-annotator": annotator });
      box.checked = true;
      box.addEventListener("change", () => { group.style.display = box.checked ? "" : "none"; });
      const label = RB.element("label");
      label.append(box, ` ${annotator} (${regions.length})`);
      layers.appendChild(label);
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
        const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
        path.setAttribute("d", region.path);
        path.setAttribute("fill", region.colour);
        path.setAttribute("stroke", region.colour);
        path.setAttribute("fill-rule", "evenodd");
        path.setAttribute("data-region", `${annotator}/${region.id}`);
        if (region.stuff) path.setAttribute("class", "stuff"); // stuff apart from things: a panoptic truth
        const show = () => {
          svg.querySelectorAll("path.chosen").forEach((p) => p.classList.remove("chosen"));
          path.classList.add("chosen");
          RB.describe(annotator, region);
        };
        path.addEventListener("mouseenter", show);
        path.addEventListener("click", show);
        group.appendChild(path);
      }
      svg.appendChild(group);
    }
    if (image.drawn) RB.predictions(image.drawn, svg, layers);
  },

  predictions(shapes, svg, layers) {
    // A mask task's run: its shapes as one more layer, on top, dashed; detections below a chosen
    // score hidden (a run gives up to 100 an image, most of them faint).
    const task = RB.data.meta.run.task;
    const group = document.createElementNS("http://www.w3.org/2000/svg", "g");
    group.setAttribute("class", "run");
    group.setAttribute("data-annotator", "the run");
    const box = RB.element("input", { type: "checkbox", "data-annotator": "the run" });
    box.checked = true;
    box.addEventListener("change", () => { group.style.display = box.checked ? "" : "none"; });
    const count = RB.element("span", { id: "run-count" });
    const label = RB.element("label");
    label.append(box, ` the run's ${task} `, count);
    layers.appendChild(label);
    const listing = document.getElementById("predictions");
    document.getElementById("run-listing").hidden = false;
    const header = listing.insertRow();
    const figures = { instances: ["score", "outcome", "iou"].concat(shapes.some((s) => s.facts.error) ? ["error"] : []), segments: ["segment", "area"], semantic: ["area", "right"], panoptic: ["kind", "outcome", "iou", "area"] }[task];
    const labelled = task !== "segments"; // a segment has a number, not a label
    const heading = { iou: "IoU", right: "right" };
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
        const value = shape.facts[name];
        const cell = row.insertCell();
        cell.textContent = value === null || value === undefined ? "" : String(value);
        if (name === "outcome") cell.className = value === "matched" ? "right" : "wrong";
      }
      if (!shape.path) return; // an empty mask: listed, not drawn
      const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
      path.setAttribute("d", shape.path);
      path.setAttribute("fill", shape.colour);
      path.setAttribute("stroke", shape.colour);
      path.setAttribute("fill-rule", "evenodd");
      path.setAttribute("data-predicted", String(k));
      if (shape.facts.kind === "stuff") path.setAttribute("class", "stuff");
      const show = () => {
        svg.querySelectorAll("path.chosen").forEach((p) => p.classList.remove("chosen"));
        path.classList.add("chosen");
        RB.explain(task, k, shape);
      };
      path.addEventListener("mouseenter", show);
      path.addEventListener("click", show);
      group.appendChild(path);
      drawn.push([path, row, shape]);
    });
    for (const [path] of drawn.slice().reverse()) group.appendChild(path); // the first listed on top
    svg.appendChild(group);
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

  explain(task, k, shape) {
    const panel = document.getElementById("region");
    panel.replaceChildren();
    const name = shape.label === null ? `segment ${shape.facts.segment}` : shape.label;
    panel.appendChild(RB.element("h2", {}, `${name} (the run, ${task} ${k + 1})`));
    const said = (task === "panoptic" ? {
      matched: "matched a truth segment of its label at IoU > 0.5",
      unmatched: "matched no truth segment: a false positive",
      "left out": "lies mostly on VOID and crowds of its label: not counted",
    } : {
      matched: "took an instance of its label at IoU ≥ 0.5",
      unmatched: "took no instance: a false positive",
      crowd: "lies on a crowd region: not counted",
      dropped: "beyond the detections scored per image and label",
    })[shape.facts.outcome];
    if (said) panel.appendChild(RB.element("p", { class: shape.facts.outcome === "matched" ? "right" : "wrong" }, said));
    const error = {
      Cls: "TIDE: a classification error, it lies on an object of another label",
      Loc: "TIDE: a localisation error, on an object of its label but not well enough (IoU 0.1 to 0.5)",
      Both: "TIDE: wrong label and poorly placed",
      Dupe: "TIDE: a duplicate of a better-scored detection of the same object",
      Bkg: "TIDE: a background error, on no object (IoU at most 0.1)",
    }[shape.facts.error];
    if (error) panel.appendChild(RB.element("p", { class: "wrong" }, error));
    const table = RB.element("table", { class: "features" });
    for (const [name, value] of Object.entries(shape.facts)) {
      const row = table.insertRow();
      row.insertCell().textContent = { iou: "IoU (best)", right: "share the truth labels so" }[name] || name;
      row.insertCell().textContent = value === null ? "" : String(value);
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

  describe(annotator, region) {
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
        list.appendChild(RB.element("li", {}, `region ${other}: ${[topological, horizontal, vertical].filter(Boolean).join(", ")}`));
      }
      panel.appendChild(list);
    }
  },
};
