// The web view of sliced: the network as a graph, the slices, and forms that change
// them. Everything is read from the session-guarded /api/ endpoints; /api/events says
// when to read again, so changes made elsewhere (the `slice` tool, another browser)
// show without a reload.
"use strict";

// Every event type of GET /events (docs/api.md); any of them means "read again".
const EVENT_TYPES = [
  "slice_created", "slice_deleted", "port_added", "port_deleted", "mac_added", "mac_deleted",
  "switch_up", "switch_down", "link_up", "link_down", "host_learned", "host_moved",
  "host_forgotten", "path_installed", "path_deleted", "resync",
];

// Colour-blind-safe (Okabe-Ito) colours for slices; hosts in no slice are grey.
const PALETTE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442"];
const NO_SLICE = "#999999";

const LOGIN = "/auth/developer?next=" + encodeURIComponent("/ui");

let cy = null;
let refreshing = null;
let refreshAgain = false;

class LoggedOut extends Error {}

// What the page's Content-Security-Policy refused: a refusal means some part of the page
// (a library update, say) does not work, so it is shown rather than left to the console.
const refused = [];
document.addEventListener("securitypolicyviolation", (event) => {
  refused.push(`${event.violatedDirective}: ${event.blockedURI || "inline"}`);
  say(`The page's security policy refused ${refused.at(-1)}`, "error");
});

async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch("/api" + path, init);
  if (response.status === 403) {
    throw new LoggedOut();
  }
  const answer = await response.json().catch(() => null);
  if (!response.ok) {
    throw new Error((answer && answer.error) || `${method} ${path}: ${response.status}`);
  }
  return answer;
}

const segment = encodeURIComponent;

// The whole state, read afresh: small networks and few slices make this cheaper to get
// right than applying each event to a copy.
async function readState() {
  const [switches, links, hosts, slices] = await Promise.all([
    api("GET", "/topology/switches").catch(() => []),
    api("GET", "/topology/links").catch(() => []),
    api("GET", "/topology/hosts").catch(() => []),
    api("GET", "/slices"),
  ]);
  const members = await Promise.all(slices.map(async ({ name }) => {
    const ports = await api("GET", `/slices/${segment(name)}/ports`);
    const withMacs = await Promise.all(ports.map(async (port) => {
      const macs = await api("GET", `/slices/${segment(name)}/ports/${segment(port.name)}/mac_addresses`);
      return { port: port.name, dpid: port.dpid, portNo: port.port_no, macs: macs.map((mac) => mac.name) };
    }));
    return { name, ports: withMacs };
  }));
  return { switches, links, hosts, slices: members };
}

function colourOf(slice) {
  let hash = 0;
  for (const c of slice) {
    hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  }
  return PALETTE[hash % PALETTE.length];
}

// The slice a learned host belongs to: its MAC listed on its port, or its port in a
// slice that lists no MAC on it (any host behind that port).
function sliceOfHost(host, slices) {
  let byPort = null;
  for (const slice of slices) {
    for (const member of slice.ports) {
      if (member.port !== host.port) continue;
      if (member.macs.includes(host.mac)) return slice.name;
      if (member.macs.length === 0 && byPort === null) byPort = slice.name;
    }
  }
  return byPort;
}

const switchOfPort = (port) => port.split(":")[0];

function graphElements(state) {
  const elements = [];
  for (const sw of state.switches) {
    elements.push({ group: "nodes", data: { id: "sw:" + sw.name, label: sw.name, kind: "switch" } });
  }
  const known = new Set(state.switches.map((sw) => sw.name));
  // Each cable is two links, one per direction; the graph draws it once.
  const cables = new Set();
  for (const link of state.links) {
    const ends = [link.src, link.dst].sort();
    const id = "link:" + ends.join("-");
    if (cables.has(id) || !known.has(switchOfPort(ends[0])) || !known.has(switchOfPort(ends[1]))) continue;
    cables.add(id);
    elements.push({ group: "edges", data: { id, source: "sw:" + switchOfPort(ends[0]), target: "sw:" + switchOfPort(ends[1]), kind: "link" } });
  }
  for (const host of state.hosts) {
    const sw = switchOfPort(host.port);
    if (!known.has(sw)) continue;
    const slice = sliceOfHost(host, state.slices);
    const colour = slice === null ? NO_SLICE : colourOf(slice);
    elements.push({ group: "nodes", data: { id: "host:" + host.mac, label: host.mac, kind: "host", slice: slice || "", colour } });
    elements.push({ group: "edges", data: { id: "at:" + host.mac, source: "host:" + host.mac, target: "sw:" + sw, kind: "attachment" } });
  }
  return elements;
}

function drawGraph(state) {
  if (typeof cytoscape !== "function") return;
  const elements = graphElements(state);
  if (cy === null) {
    cy = cytoscape({
      container: document.getElementById("graph"),
      style: [
        { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 4 } },
        { selector: "node[kind = 'switch']", style: { shape: "round-rectangle", "background-color": "#334", width: 46, height: 30 } },
        { selector: "node[kind = 'host']", style: { shape: "ellipse", "background-color": "data(colour)", width: 20, height: 20 } },
        { selector: "edge[kind = 'link']", style: { width: 3, "line-color": "#667" } },
        { selector: "edge[kind = 'attachment']", style: { width: 1, "line-color": "#bbb", "line-style": "dashed" } },
      ],
      // A small network would otherwise be zoomed in until its labels are huge.
      maxZoom: 1.5,
    });
    window.sliced.cy = cy;
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
      const existing = cy.getElementById(id);
      if (existing.nonempty()) {
        existing.data(element.data);
      } else {
        cy.add(element);
        changed = true;
      }
    }
  });
  if (changed) {
    cy.layout({ name: "cose", animate: false, randomize: false, nodeDimensionsIncludeLabels: true }).run();
  }
}

// Builds an element with attributes and children; text goes in as text, never as HTML.
function el(tag, attributes, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    element.setAttribute(name, value);
  }
  for (const child of children) {
    element.append(child);
  }
  return element;
}

function removeButton(label, action) {
  const button = el("button", { type: "button", class: "remove", "aria-label": label }, "remove");
  button.addEventListener("click", () => act(action));
  return button;
}

function drawLists(state) {
  document.getElementById("switches").replaceChildren(...state.switches.map((sw) =>
    el("li", { "data-switch": sw.name }, `${sw.name} (OpenFlow ${sw.version === 4 ? "1.3" : "1.0"}, ${sw.ports.length} ports)`)));
  const cables = new Map();
  for (const link of state.links) {
    const ends = [link.src, link.dst].sort();
    cables.set(ends.join(" - "), ends);
  }
  document.getElementById("links").replaceChildren(...[...cables.keys()].map((cable) =>
    el("li", { "data-link": cable }, cable)));
  document.getElementById("hosts").replaceChildren(...state.hosts.map((host) => {
    const slice = sliceOfHost(host, state.slices);
    return el("li", { "data-host": host.mac, "data-slice": slice || "" },
      `${host.mac} at ${host.port}` + (slice === null ? "" : ` in ${slice}`));
  }));

  document.getElementById("slices").replaceChildren(...state.slices.map((slice) => {
    const path = `/slices/${segment(slice.name)}`;
    const ports = el("ul", {}, ...slice.ports.map((member) => {
      const portPath = `${path}/ports/${segment(member.port)}`;
      const macs = el("ul", {}, ...member.macs.map((mac) => el("li", { "data-mac": mac }, mac,
        removeButton(`remove host ${mac} from ${slice.name}`,
          () => api("DELETE", `${portPath}/mac_addresses`, { name: mac })))));
      return el("li", { "data-port": member.port }, member.port,
        removeButton(`remove port ${member.port} from ${slice.name}`,
          () => api("DELETE", `${path}/ports`, { dpid: member.dpid, port_no: member.portNo })), macs);
    }));
    const remove = el("button", { type: "button", class: "remove", "aria-label": `delete slice ${slice.name}` }, "delete");
    remove.addEventListener("click", () => {
      if (confirm(`Delete slice ${slice.name} with its ports and hosts?`)) {
        act(() => api("DELETE", "/slices", { name: slice.name }));
      }
    });
    return el("li", { "data-slice": slice.name },
      el("span", { class: "swatch", "data-colour": colourOf(slice.name) }), el("strong", {}, slice.name), remove, ports);
  }));
  for (const swatch of document.querySelectorAll(".swatch")) {
    swatch.style.backgroundColor = swatch.dataset.colour;
  }

  const select = document.querySelector("#add-host select");
  const chosen = select.value;
  select.replaceChildren(...state.slices.map((slice) => el("option", { value: slice.name }, slice.name)));
  if (state.slices.some((slice) => slice.name === chosen)) select.value = chosen;
}

function say(message, kind) {
  const status = document.getElementById("status");
  status.textContent = message;
  status.dataset.kind = kind;
}

// Reads the state again; calls that come while a read is under way make one more read
// after it, so that the last change is always shown.
function refresh() {
  if (refreshing) {
    refreshAgain = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      refreshAgain = false;
      try {
        const state = await readState();
        drawLists(state);
        drawGraph(state);
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      } catch (error) {
        handle(error);
      }
    } while (refreshAgain);
    refreshing = null;
  })();
  return refreshing;
}

function handle(error) {
  if (error instanceof LoggedOut) {
    location.assign(LOGIN);
    return;
  }
  say(error.message, "error");
}

async function act(action) {
  try {
    await action();
    say("", "ok");
  } catch (error) {
    handle(error);
  }
  // The event stream would bring the change too; reading now shows it at once.
  refresh();
}

function follow() {
  const indicator = document.getElementById("connection");
  const events = new EventSource("/api/events");
  events.addEventListener("open", () => {
    indicator.dataset.state = "live";
    indicator.textContent = "live";
    // Whatever happened while the stream was down is read now.
    refresh();
  });
  events.addEventListener("error", () => {
    indicator.dataset.state = "connecting";
    indicator.textContent = "reconnecting";
    // A refused stream (the session ended: 403) is not retried by the browser; reading
    // the state finds out why, and goes to the login if that is it.
    if (events.readyState === EventSource.CLOSED) {
      refresh().then(() => setTimeout(follow, 5000));
    }
  });
  for (const type of EVENT_TYPES) {
    events.addEventListener(type, () => refresh());
  }
}

function wireForms() {
  const create = document.getElementById("create-slice");
  create.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = create.elements.name.value.trim();
    act(async () => {
      await api("POST", "/slices", { name });
      create.reset();
    });
  });
  const addHost = document.getElementById("add-host");
  addHost.addEventListener("submit", (event) => {
    event.preventDefault();
    const { slice, port, mac } = addHost.elements;
    act(async () => {
      await api("POST", `/slices/${segment(slice.value)}/ports/${segment(port.value.trim())}/mac_addresses`,
        { name: mac.value.trim() });
      port.value = "";
      mac.value = "";
    });
  });
  document.getElementById("logout").addEventListener("submit", async (event) => {
    event.preventDefault();
    await fetch("/auth/logout", { method: "POST", credentials: "same-origin" });
    location.assign(LOGIN);
  });
}

document.addEventListener("DOMContentLoaded", async () => {
  window.sliced = { cy: null, refresh, refused };
  wireForms();
  try {
    const user = await api("GET", "/session");
    document.getElementById("user").textContent = user.email ? `${user.name} <${user.email}>` : user.name;
  } catch (error) {
    handle(error);
    return;
  }
  await refresh();
  follow();
});
