// The page around the graph: the legend, the lists, the slices with their remove
// buttons, the details of the selected switch or host, and the hint on an empty network.
// Text goes into the page as text, never as HTML.

import {
  api, cablesOf, flowsOf, NO_SLICE, segment, slicesOfHost, slicesOfPort, switchOfPort,
} from "./state.js";

export function el(tag, attributes, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    element.setAttribute(name, value);
  }
  for (const child of children) {
    element.append(child);
  }
  return element;
}

// A round mark in a slice's colour. Its colour is set through the CSS object model, which
// the page's policy allows (it refuses style attributes written as markup).
function swatch(colour) {
  const mark = el("span", { class: "swatch", "data-colour": colour });
  mark.style.backgroundColor = colour;
  return mark;
}

function sliceTag(name, colours) {
  return el("span", { class: "slice-tag", "data-slice": name }, swatch(colours.get(name)), name);
}

// What the page's parts need from the page: `act` runs a change and reads the state
// again, `ask` asks before a removal, `select` opens the details of a switch or host, and
// `user.canWrite` says whether any change may be offered.
export function drawPanels(state, page) {
  drawLegend(state);
  drawLists(state, page);
  drawSlices(state, page);
  drawDetails(state, page);
  drawEmptyHint(state);
  const select = document.querySelector("#add-host select");
  const chosen = select.value;
  select.replaceChildren(...state.slices.map((slice) => el("option", { value: slice.name }, slice.name)));
  if (state.slices.some((slice) => slice.name === chosen)) select.value = chosen;
}

function drawLegend(state) {
  const entries = state.slices.map((slice) =>
    el("li", { "data-legend": slice.name }, swatch(state.colours.get(slice.name)), slice.name));
  entries.push(el("li", { "data-legend-none": "" }, swatch(NO_SLICE), "in no slice"));
  document.getElementById("legend").replaceChildren(...entries);
}

// A button that opens the details of a switch or host: the lists' way to what a click
// on the graph shows, for the keyboard and screen readers.
function detailsButton(kind, name, label, page) {
  const button = el("button", { type: "button", class: "link", "data-details": `${kind}:${name}` }, label);
  button.addEventListener("click", () => page.select(kind, name));
  return button;
}

function drawLists(state, page) {
  document.getElementById("switches").replaceChildren(...state.switches.map((sw) =>
    el("li", { "data-switch": sw.name }, detailsButton("switch", sw.name, sw.name, page),
      ` (OpenFlow ${versionOf(sw)}, ${sw.ports.length} ports)`)));
  document.getElementById("links").replaceChildren(...[...cablesOf(state.links).keys()].map((cable) =>
    el("li", { "data-link": cable }, cable)));
  document.getElementById("hosts").replaceChildren(...state.hosts.map((host) => {
    const slices = slicesOfHost(host, state.slices);
    return el("li", { "data-host": host.mac, "data-slice": slices.join(" ") },
      detailsButton("host", host.mac, host.mac, page), ...announced(host), ` at ${host.port}`,
      ...(slices.length === 0 ? [" in no slice"] : [" in ", ...slices.map((name) => sliceTag(name, state.colours))]));
  }));
}

const versionOf = (sw) => (sw.version === 4 ? "1.3" : "1.0");

// A daemon from before the addresses were learned sends none.
const addressesOf = (host) => (Array.isArray(host.ip_addresses) ? host.ip_addresses : []);

// The host's announced addresses after its MAC in the text list, if it announced any.
function announced(host) {
  const addresses = addressesOf(host);
  return addresses.length === 0 ? [] : [" (", el("span", { "data-ip": "" }, addresses.join(", ")), ")"];
}

// A button that removes something once the user confirms; none for a viewer.
function removeButton(label, question, action, page, text = "remove") {
  if (!page.user.canWrite) return "";
  const button = el("button", { type: "button", class: "remove write", "aria-label": label }, text);
  button.addEventListener("click", async () => {
    if (await page.ask(question)) page.act(action);
  });
  return button;
}

function drawSlices(state, page) {
  document.getElementById("slices").replaceChildren(...state.slices.map((slice) => {
    const path = `/slices/${segment(slice.name)}`;
    const ports = el("ul", {}, ...slice.ports.map((member) => {
      const portPath = `${path}/ports/${segment(member.port)}`;
      const macs = el("ul", {}, ...member.macs.map((mac) => el("li", { "data-mac": mac }, mac,
        removeButton(`remove host ${mac} from ${slice.name}`, `Remove host ${mac} from slice ${slice.name}?`,
          () => api("DELETE", `${portPath}/mac_addresses`, { name: mac }), page))));
      const hosts = member.macs.length === 0 ? " (any host)" : "";
      return el("li", { "data-port": member.port }, member.port + hosts,
        removeButton(`remove port ${member.port} from ${slice.name}`,
          `Remove port ${member.port} from slice ${slice.name}, with the hosts listed on it?`,
          () => api("DELETE", `${path}/ports`, { dpid: member.dpid, port_no: member.portNo }), page), macs);
    }));
    const remove = removeButton(`delete slice ${slice.name}`, `Delete slice ${slice.name} with its ports and hosts?`,
      () => api("DELETE", "/slices", { name: slice.name }), page, "delete");
    return el("li", { "data-slice": slice.name },
      swatch(state.colours.get(slice.name)), el("strong", {}, slice.name), remove, ports);
  }));
}

// The details of the selected switch or host, drawn again with every state so that they
// stay current; a selection that is gone from the network says so.
function drawDetails(state, page) {
  const panel = document.getElementById("details");
  const selected = page.selected();
  if (selected === null) {
    panel.hidden = true;
    panel.replaceChildren();
    delete panel.dataset.kind;
    delete panel.dataset.name;
    return;
  }
  const { kind, name } = selected;
  panel.hidden = false;
  panel.dataset.kind = kind;
  panel.dataset.name = name;
  const close = el("button", { type: "button", class: "close", "aria-label": "close the details" }, "×");
  close.addEventListener("click", () => page.select(null));
  const body = kind === "switch" ? switchDetails(state, name) : hostDetails(state, name, page);
  panel.replaceChildren(close, ...body);
}

function facts(...rows) {
  return el("dl", {}, ...rows.flatMap(([term, value, key]) =>
    [el("dt", {}, term), el("dd", key ? { "data-detail": key } : {}, value)]));
}

function switchDetails(state, name) {
  const sw = state.switches.find((candidate) => candidate.name === name);
  if (!sw) return [el("h2", {}, `Switch ${name}`), el("p", {}, "No longer connected.")];
  const flows = flowsOf(sw, state.paths);
  const cableAt = new Map();
  for (const [a, b] of cablesOf(state.links).values()) {
    cableAt.set(a, b);
    cableAt.set(b, a);
  }
  const rows = [...sw.ports].sort((a, b) => a.port_no - b.port_no).map((port) => {
    const id = `${sw.name}:${port.port_no}`;
    const hosts = state.hosts.filter((host) => host.port === id).map((host) => host.mac);
    const towards = cableAt.has(id) ? `cable to ${cableAt.get(id)}` : hosts.length ? `hosts ${hosts.join(", ")}` : "";
    return el("tr", { "data-port": id, "data-live": String(port.live) },
      el("td", {}, String(port.port_no), el("br"), el("small", {}, port.name)), el("td", {}, port.live ? "up" : "down"),
      el("td", {}, towards),
      el("td", {}, ...slicesOfPort(id, state.slices).map((slice) => sliceTag(slice, state.colours))));
  });
  return [
    el("h2", {}, `Switch ${sw.name}`),
    facts(["Datapath id", String(sw.dpid)], ["OpenFlow", versionOf(sw)],
      ["Flows", `${flows.count} (${flows.kind})`, "flows"], ["Ports", String(sw.ports.length), "ports"]),
    el("table", { class: "ports" },
      el("thead", {}, el("tr", {}, ...["Port", "State", "Towards", "Slices"].map((head) => el("th", {}, head)))),
      el("tbody", {}, ...rows)),
  ];
}

function hostDetails(state, mac, page) {
  const host = state.hosts.find((candidate) => candidate.mac === mac);
  if (!host) return [el("h2", {}, `Host ${mac}`), el("p", {}, "No longer seen on the network.")];
  const slices = slicesOfHost(host, state.slices);
  const parts = [
    el("h2", {}, `Host ${host.mac}`),
    facts(["MAC", host.mac, "mac"],
      ["IP addresses", addressesOf(host).join(", ") || "none announced", "ip"],
      ["Port", `${host.port} (switch ${switchOfPort(host.port)})`, "port"]),
    el("p", { class: "note" }, "IP addresses are what the host announced (ARP, neighbour discovery): shown, never trusted."),
    el("h3", {}, "Slices"),
    slices.length === 0
      ? el("p", { "data-detail": "no-slice" }, "In no slice: it can reach no other host.")
      : el("ul", { class: "host-slices" }, ...slices.map((name) => el("li", {}, sliceTag(name, state.colours)))),
  ];
  const others = state.slices.filter((slice) => !slices.includes(slice.name));
  if (page.user.canWrite && others.length > 0) {
    parts.push(addToSlice(host, others, page));
  } else if (page.user.canWrite && state.slices.length === 0) {
    parts.push(el("p", { class: "write" }, "Create a slice to put this host in."));
  }
  return parts;
}

// Puts the host, on the port it was learned at, into a slice it is not in yet, as the
// "Add a host" form would (the port comes along with the MAC).
function addToSlice(host, slices, page) {
  const select = el("select", { name: "slice", "aria-label": "slice" },
    ...slices.map((slice) => el("option", { value: slice.name }, slice.name)));
  const chosen = page.detailsSlice();
  if (slices.some((slice) => slice.name === chosen)) select.value = chosen;
  select.addEventListener("change", () => page.detailsSlice(select.value));
  const add = el("button", { type: "button", class: "add-to-slice" }, "Add to slice");
  add.addEventListener("click", () => {
    const slice = select.value;
    page.act(() => api("POST", `/slices/${segment(slice)}/ports/${segment(host.port)}/mac_addresses`, { name: host.mac }));
  });
  return el("div", { class: "add-to-slice write" }, el("label", {}, "Add to ", select), " ", add);
}

// On a network without switches, where to point them: the daemon's OpenFlow listeners,
// which the server writes into the page (`data-openflow`, a JSON list).
function drawEmptyHint(state) {
  const hint = document.getElementById("empty");
  hint.hidden = state.switches.length > 0;
  if (hint.hidden) return;
  const listeners = openflowListeners();
  if (listeners.length === 0) {
    hint.replaceChildren(el("strong", {}, "No switches are connected. "),
      "This sliced names no OpenFlow listener, so no switch can connect.");
    return;
  }
  const commands = listeners.map(({ address, tls }) => el("li", { "data-openflow": address },
    el("code", {}, address), tls ? " (TLS)" : "", " — e.g. ",
    el("code", {}, `ovs-vsctl set-controller br0 ${tls ? "ssl" : "tcp"}:${reachable(address)}`)));
  hint.replaceChildren(el("strong", {}, "No switches are connected yet. "),
    "Point your switches' controller at this sliced's OpenFlow listener:", el("ul", {}, ...commands));
}

// Each listener as the server names it ("127.0.0.1:6653 (tcp)").
function openflowListeners() {
  let listed = [];
  try {
    listed = JSON.parse(document.body.dataset.openflow || "[]");
  } catch {
    listed = [];
  }
  return listed.filter((entry) => typeof entry === "string").map((entry) => {
    const [, address, kind] = /^(\S+)(?:\s+\((\w+)\))?$/.exec(entry.trim()) || [null, entry, ""];
    return { address, tls: kind === "tls" };
  });
}

// A listener on every address (0.0.0.0, [::]) is reached through this page's host name.
function reachable(address) {
  const port = address.slice(address.lastIndexOf(":") + 1);
  const host = address.slice(0, address.lastIndexOf(":"));
  if (host !== "0.0.0.0" && host !== "[::]") return address;
  // An IPv6 host name comes in brackets already.
  return `${location.hostname}:${port}`;
}
