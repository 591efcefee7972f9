// The network as a Cytoscape graph: switches, the cables between them, and learned hosts
// drawn in their slices' colours, a host in several slices as a pie of them. Hosts are
// labelled with the addresses they announced and their MAC. Where nodes go is layout.js's
// business; here they are drawn, dragged (a dragged node's place is kept in localStorage),
// zoomed and panned.

import { NO_SLICE, cablesOf, slicesOfHost, switchOfPort } from "./state.js";
import { outwardOf, placeHosts, placeSwitches, roomFor } from "./layout.js";

// Cytoscape draws at most this many pie slices on a node.
const PIE_SLICES = 16;
// How many announced addresses a label shows; the rest are in the host's details.
const LABEL_ADDRESSES = 2;
// Where dragged positions are kept, and how many at most.
const STORE_KEY = "sliced.graph.positions";
const STORED_MAX = 500;
// Fitting never zooms in further than this: a tiny network stays at a natural size.
const FIT_ZOOM_MAX = 1.4;
const ZOOM_STEP = 1.25;

let cy = null;
// Whether the user zoomed or panned since the graph was last fitted: new nodes then do
// not take the view away from where the user put it.
let viewTouched = false;
let fitting = false;

export const graph = () => cy;

function readStored() {
  try {
    const stored = JSON.parse(localStorage.getItem(STORE_KEY) || "{}");
    return stored && typeof stored === "object" ? stored : {};
  } catch {
    return {};
  }
}

function storedPosition(stored, id) {
  const value = stored[id];
  return Array.isArray(value) && value.length === 2 && value.every(Number.isFinite)
    ? { x: value[0], y: value[1] } : null;
}

// Keeps where the user put `node`. Over the bound, places of nodes not drawn now go
// first, then the oldest.
function store(node) {
  const stored = readStored();
  delete stored[node.id()];
  const { x, y } = node.position();
  stored[node.id()] = [Math.round(x), Math.round(y)];
  if (Object.keys(stored).length > STORED_MAX) {
    for (const id of Object.keys(stored)) {
      if (cy.getElementById(id).empty()) delete stored[id];
    }
  }
  const ids = Object.keys(stored);
  while (ids.length > STORED_MAX) delete stored[ids.shift()];
  try {
    localStorage.setItem(STORE_KEY, JSON.stringify(stored));
  } catch {
    // No storage (a private window, a full quota): the place lasts for this page only.
  }
}

export function forgetPlaces() {
  try {
    localStorage.removeItem(STORE_KEY);
  } catch {
    // Nothing was kept.
  }
}

function hostLabel(host) {
  const addresses = Array.isArray(host.ip_addresses) ? host.ip_addresses : [];
  const shown = addresses.slice(0, LABEL_ADDRESSES);
  if (addresses.length > LABEL_ADDRESSES) shown.push(`+${addresses.length - LABEL_ADDRESSES} more`);
  return [...shown, host.mac].join("\n");
}

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
        id: "host:" + host.mac, label: hostLabel(host), kind: "host", name: host.mac, switch: sw,
        slice: slices.join(" "), colour: colours[0] || NO_SLICE, shared: slices.length > 1 ? "yes" : "no",
      },
      pie: pieOf(colours),
    });
    // The switch is in the id: a host that moves gets a new edge (an edge's ends are fixed).
    elements.push({ group: "edges", data: { id: `at:${host.mac}@${sw}`, source: "host:" + host.mac, target: "sw:" + sw, kind: "attachment" } });
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

// Places the nodes. Each node has a place in the layout (kept in its scratch data for as
// long as the page runs: nodes already laid out stay, new ones are laid out around them)
// and is drawn there unless the user dragged it somewhere else (kept in localStorage).
// A host's place is an offset from its switch, so a dragged switch takes its hosts along.
// `fresh` lays everything out anew.
function place(fresh) {
  const stored = readStored();
  const switches = cy.nodes('[kind = "switch"]');
  const hosts = cy.nodes('[kind = "host"]');
  const laidOut = (node) => (fresh ? undefined : node.scratch("_sliced_layout"));
  const fixed = new Map();
  switches.forEach((node) => {
    if (laidOut(node)) fixed.set(node.id(), laidOut(node));
  });
  const ids = switches.map((node) => node.id()).sort();
  const cables = cy.edges('[kind = "link"]').map((edge) => [edge.source().id(), edge.target().id()]);
  const hostsOf = (id) => hosts.filter((host) => "sw:" + host.data("switch") === id);
  const room = new Map(ids.map((id) => [id, roomFor(hostsOf(id).length)]));
  const at = placeSwitches(ids, cables, room, fixed);
  const neighbours = new Map(ids.map((id) => [id, []]));
  for (const [a, b] of cables) {
    neighbours.get(a).push(b);
    neighbours.get(b).push(a);
  }
  cy.batch(() => {
    switches.forEach((node) => {
      node.scratch("_sliced_layout", at.get(node.id()));
      node.position(storedPosition(stored, node.id()) || at.get(node.id()));
    });
    for (const id of ids) {
      const centre = at.get(id);
      const drawnAt = cy.getElementById(id).position();
      const staying = [];
      const waiting = [];
      hostsOf(id).forEach((node) => {
        const offset = fresh ? undefined : node.scratch("_sliced_offset");
        if (offset && node.scratch("_sliced_at") === id) {
          staying.push({ x: centre.x + offset.x, y: centre.y + offset.y });
        } else {
          waiting.push(node);
        }
      });
      waiting.sort((a, b) => (a.id() < b.id() ? -1 : 1));
      const spots = placeHosts(centre, outwardOf(id, at, neighbours), waiting.map((n) => n.id()), staying);
      for (const node of waiting) {
        const spot = spots.get(node.id());
        const offset = { x: spot.x - centre.x, y: spot.y - centre.y };
        node.scratch("_sliced_offset", offset);
        node.scratch("_sliced_at", id);
        node.position(storedPosition(stored, node.id()) || { x: drawnAt.x + offset.x, y: drawnAt.y + offset.y });
      }
    }
  });
}

function fit() {
  if (cy.elements().empty()) return;
  fitting = true;
  cy.fit(undefined, 40);
  if (cy.zoom() > FIT_ZOOM_MAX) {
    cy.zoom(FIT_ZOOM_MAX);
    cy.center();
  }
  fitting = false;
  viewTouched = false;
}

function zoomBy(factor) {
  const { width, height } = { width: cy.width(), height: cy.height() };
  cy.zoom({ level: cy.zoom() * factor, renderedPosition: { x: width / 2, y: height / 2 } });
}

function wireTools() {
  const tools = document.getElementById("graph-tools");
  if (!tools) return;
  tools.querySelector("[data-tool=zoom-in]").addEventListener("click", () => zoomBy(ZOOM_STEP));
  tools.querySelector("[data-tool=zoom-out]").addEventListener("click", () => zoomBy(1 / ZOOM_STEP));
  tools.querySelector("[data-tool=fit]").addEventListener("click", () => fit());
  tools.querySelector("[data-tool=reset]").addEventListener("click", () => {
    forgetPlaces();
    place(true);
    fit();
  });
}

function create(onSelect) {
  cy = cytoscape({
    container: document.getElementById("graph"),
    style: [
      {
        selector: "node",
        style: {
          label: "data(label)", "font-size": 12, "text-valign": "bottom", "text-margin-y": 5,
          "text-wrap": "wrap", "text-max-width": 160, "line-height": 1.25, color: "#111",
          "text-background-color": "#ffffff", "text-background-opacity": 0.85, "text-background-padding": 2,
          "min-zoomed-font-size": 6,
        },
      },
      { selector: "node[kind = 'switch']", style: { shape: "round-rectangle", "background-color": "#334", width: 50, height: 32, "font-size": 14, "font-weight": "bold" } },
      { selector: "node[kind = 'host']", style: { shape: "ellipse", "background-color": "data(colour)", width: 22, height: 22, "pie-size": "100%" } },
      { selector: "node[shared = 'yes']", style: { width: 28, height: 28, "border-width": 2, "border-color": "#222" } },
      { selector: "node:selected", style: { "overlay-color": "#0072b2", "overlay-opacity": 0.25, "overlay-padding": 6 } },
      { selector: "edge[kind = 'link']", style: { width: 3, "line-color": "#667" } },
      { selector: "edge[kind = 'attachment']", style: { width: 1, "line-color": "#bbb", "line-style": "dashed" } },
    ],
    minZoom: 0.1,
    maxZoom: 4,
    wheelSensitivity: 0.3,
    selectionType: "single",
  });
  cy.on("tap", "node", (event) => onSelect(event.target.data("kind"), event.target.data("name")));
  cy.on("tap", (event) => {
    if (event.target === cy) onSelect(null);
  });
  cy.on("viewport", () => {
    if (!fitting) viewTouched = true;
  });
  // A switch dragged takes its hosts along (those the user did not place themselves).
  let grabbedAt = null;
  cy.on("grab", "node[kind = 'switch']", (event) => {
    grabbedAt = { ...event.target.position() };
  });
  cy.on("drag", "node[kind = 'switch']", (event) => {
    if (!grabbedAt) return;
    const now = event.target.position();
    const [dx, dy] = [now.x - grabbedAt.x, now.y - grabbedAt.y];
    grabbedAt = { ...now };
    const stored = readStored();
    cy.nodes(`[kind = "host"][switch = "${event.target.data("name")}"]`).forEach((host) => {
      if (!storedPosition(stored, host.id())) host.shift({ x: dx, y: dy });
    });
  });
  cy.on("dragfree", "node", (event) => {
    grabbedAt = null;
    store(event.target);
  });
  wireTools();
}

// Draws the state, creating the graph on the first call; `onSelect(kind, name)` is called
// when a switch or host is clicked, `onSelect(null)` when the background is.
export function drawGraph(state, onSelect) {
  if (typeof cytoscape !== "function") return;
  const elements = graphElements(state);
  if (cy === null) create(onSelect);
  const wanted = new Map(elements.map((element) => [element.data.id, element]));
  let added = false;
  cy.batch(() => {
    cy.elements().forEach((element) => {
      if (!wanted.has(element.id())) element.remove();
    });
    for (const [id, element] of wanted) {
      let existing = cy.getElementById(id);
      if (existing.nonempty()) {
        existing.data(element.data);
      } else {
        existing = cy.add({ group: element.group, data: element.data });
        added = true;
      }
      // The pie's parts are the node's own style (a canvas drawing, not markup).
      if (element.pie) existing.style(element.pie);
    }
  });
  // A host that moved to another switch is placed anew, by its new switch.
  const moved = cy.nodes('[kind = "host"]').some((node) =>
    node.scratch("_sliced_at") !== undefined && node.scratch("_sliced_at") !== "sw:" + node.data("switch"));
  if (added || moved) {
    place(false);
    if (!viewTouched) fit();
  }
}

// Marks the node of the selected switch or host, if it is drawn.
export function markSelected(kind, name) {
  if (cy === null) return;
  cy.nodes(":selected").unselect();
  if (kind) cy.getElementById((kind === "switch" ? "sw:" : "host:") + name).select();
}
