// The network as a Cytoscape graph: switches, the cables between them, and learned hosts
// drawn in their slices' colours, a host in several slices as a pie of them.

import { NO_SLICE, cablesOf, slicesOfHost, switchOfPort } from "./state.js";

// Cytoscape draws at most this many pie slices on a node.
const PIE_SLICES = 16;

let cy = null;

export const graph = () => cy;

function graphElements(state) {
  const elements = [];
  const known = new Set(state.switches.map((sw) => sw.name));
  for (const sw of state.switches) {
    elements.push({ group: "nodes", data: { id: "sw:" + sw.name, label: sw.name, kind: "switch", name: sw.name } });
  }
  for (const [id, ends] of cablesOf(state.links)) {
    const [a, b] = ends.map(switchOfPort);
    if (!known.has(a) || !known.has(b)) continue;
    elements.push({ group: "edges", data: { id: "link:" + id, source: "sw:" + a, target: "sw:" + b, kind: "link" } });
  }
  for (const host of state.hosts) {
    const sw = switchOfPort(host.port);
    if (!known.has(sw)) continue;
    const slices = slicesOfHost(host, state.slices);
    const colours = slices.map((name) => state.colours.get(name));
    elements.push({
      group: "nodes",
      data: {
        id: "host:" + host.mac, label: host.mac, kind: "host", name: host.mac,
        slice: slices.join(" "), colour: colours[0] || NO_SLICE, shared: slices.length > 1 ? "yes" : "no",
      },
      pie: pieOf(colours),
    });
    elements.push({ group: "edges", data: { id: "at:" + host.mac, source: "host:" + host.mac, target: "sw:" + sw, kind: "attachment" } });
  }
  return elements;
}

// The node's pie: one equal slice per colour (none for a host in no slice).
function pieOf(colours) {
  const shown = colours.slice(0, PIE_SLICES);
  const style = {};
  for (let i = 1; i <= PIE_SLICES; i += 1) {
    const colour = shown[i - 1];
    style[`pie-${i}-background-color`] = colour || NO_SLICE;
    style[`pie-${i}-background-size`] = colour ? 100 / shown.length : 0;
  }
  return style;
}

// Draws the state, creating the graph on the first call; `onSelect(kind, name)` is called
// when a switch or host is clicked, `onSelect(null)` when the background is.
export function drawGraph(state, onSelect) {
  if (typeof cytoscape !== "function") return;
  const elements = graphElements(state);
  if (cy === null) {
    cy = cytoscape({
      container: document.getElementById("graph"),
      style: [
        { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 4 } },
        { selector: "node[kind = 'switch']", style: { shape: "round-rectangle", "background-color": "#334", width: 46, height: 30 } },
        { selector: "node[kind = 'host']", style: { shape: "ellipse", "background-color": "data(colour)", width: 20, height: 20, "pie-size": "100%" } },
        { selector: "node[shared = 'yes']", style: { width: 26, height: 26, "border-width": 2, "border-color": "#222" } },
        { selector: "node:selected", style: { "overlay-color": "#0072b2", "overlay-opacity": 0.25, "overlay-padding": 6 } },
        { selector: "edge[kind = 'link']", style: { width: 3, "line-color": "#667" } },
        { selector: "edge[kind = 'attachment']", style: { width: 1, "line-color": "#bbb", "line-style": "dashed" } },
      ],
      // A small network would otherwise be zoomed in until its labels are huge.
      maxZoom: 1.5,
      autoungrabify: true,
      selectionType: "single",
    });
    cy.on("tap", "node", (event) => onSelect(event.target.data("kind"), event.target.data("name")));
    cy.on("tap", (event) => {
      if (event.target === cy) onSelect(null);
    });
  }
  const wanted = new Map(elements.map((element) => [element.data.id, element]));
  let changed = false;
  cy.batch(() => {
    cy.elements().forEach((element) => {
      if (!wanted.has(element.id())) {
        element.remove();
        changed = true;
      }
    });
    for (const [id, element] of wanted) {
      let existing = cy.getElementById(id);
      if (existing.nonempty()) {
        existing.data(element.data);
      } else {
        existing = cy.add({ group: element.group, data: element.data });
        changed = true;
      }
      // The pie's parts are the node's own style (a canvas drawing, not markup).
      if (element.pie) existing.style(element.pie);
    }
  });
  if (changed) {
    cy.layout({ name: "cose", animate: false, randomize: false, nodeDimensionsIncludeLabels: true }).run();
  }
}

// Marks the node of the selected switch or host, if it is drawn.
export function markSelected(kind, name) {
  if (cy === null) return;
  cy.nodes(":selected").unselect();
  if (kind) cy.getElementById((kind === "switch" ? "sw:" : "host:") + name).select();
}
