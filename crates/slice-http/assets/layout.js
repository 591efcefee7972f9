// Where the graph's nodes go. The layout follows from the network alone (no randomness:
// starting points come from hashes of the node ids), so the same network is drawn the
// same way on every load. Nodes already placed (drawn earlier on this page, or dragged
// by the user and kept in the browser's localStorage) stay where they are; only new ones
// are placed around them.

// The first ring of hosts around their switch, and the step to the next ring.
const HOST_RING = 105;
const RING_STEP = 80;
// Between neighbouring hosts on a ring: wider than a host's label (a MAC address, two
// lines of IP addresses), so that labels never touch.
const HOST_SPACING = 140;
// Room a switch without hosts takes (its box and label).
const SWITCH_ROOM = 50;
// Between the rooms of two switches.
const SWITCH_GAP = 70;
const ITERATIONS = 400;

export function hashOf(text) {
  let hash = 0x811c9dc5;
  for (const unit of new TextEncoder().encode(text)) {
    hash = Math.imul(hash ^ unit, 0x01000193) >>> 0;
  }
  return hash;
}

// A ring's radius and how many hosts it holds.
function ring(index) {
  const radius = HOST_RING + index * RING_STEP;
  return { radius, capacity: Math.max(1, Math.floor((2 * Math.PI * radius) / HOST_SPACING)) };
}

// How far from its switch the hosts of a switch with `count` hosts reach.
export function roomFor(count) {
  if (count === 0) return SWITCH_ROOM;
  let index = 0;
  let left = count;
  while (left > ring(index).capacity) {
    left -= ring(index).capacity;
    index += 1;
  }
  return ring(index).radius + 40;
}

// The host slots around a switch, best first: each ring from the `outward` angle,
// alternating either side of it.
function* slots(outward) {
  for (let index = 0; ; index += 1) {
    const { radius, capacity } = ring(index);
    const step = (2 * Math.PI) / capacity;
    for (let k = 0; k < capacity; k += 1) {
      const side = k === 0 ? 0 : (k % 2 === 1 ? 1 : -1) * Math.ceil(k / 2);
      const angle = outward + side * step;
      yield { x: radius * Math.cos(angle), y: radius * Math.sin(angle) };
    }
  }
}

// Places the switches: `ids` sorted, `cables` as [a, b] pairs of ids, `room` id ->
// radius its hosts need, `fixed` id -> position of those that stay. A force-directed
// layout (springs along the cables, every pair pushed apart) run for a fixed number of
// steps from hashed starting points, then pairs still closer than their rooms allow
// pushed apart.
export function placeSwitches(ids, cables, room, fixed) {
  const at = new Map();
  const spread = 150 * Math.sqrt(ids.length);
  const neighbours = new Map(ids.map((id) => [id, []]));
  for (const [a, b] of cables) {
    if (neighbours.has(a) && neighbours.has(b)) {
      neighbours.get(a).push(b);
      neighbours.get(b).push(a);
    }
  }
  for (const id of ids) {
    if (fixed.has(id)) {
      at.set(id, { ...fixed.get(id) });
      continue;
    }
    const hash = hashOf(id);
    const angle = ((hash % 3600) / 3600) * 2 * Math.PI;
    // A new switch cabled to one that stays starts next to it, not across the canvas.
    const anchor = neighbours.get(id).find((other) => fixed.has(other));
    const centre = anchor ? fixed.get(anchor) : { x: 0, y: 0 };
    const distance = anchor ? room.get(id) + room.get(anchor) + SWITCH_GAP : spread * (0.3 + ((hash >>> 12) % 100) / 140);
    at.set(id, { x: centre.x + distance * Math.cos(angle), y: centre.y + distance * Math.sin(angle) });
  }
  const free = ids.filter((id) => !fixed.has(id));
  if (free.length === 0) return at;
  const want = (a, b) => room.get(a) + room.get(b) + SWITCH_GAP;
  const cableSet = new Set(cables.map(([a, b]) => (a < b ? `${a} ${b}` : `${b} ${a}`)));
  for (let step = 0; step < ITERATIONS; step += 1) {
    const heat = 60 * (1 - step / ITERATIONS) + 1;
    const push = new Map(ids.map((id) => [id, { x: 0, y: 0 }]));
    for (let i = 0; i < ids.length; i += 1) {
      for (let j = i + 1; j < ids.length; j += 1) {
        const [a, b] = [ids[i], ids[j]];
        const [pa, pb] = [at.get(a), at.get(b)];
        let dx = pa.x - pb.x;
        let dy = pa.y - pb.y;
        let distance = Math.hypot(dx, dy);
        if (distance < 0.01) {
          // Two at one point part along a direction of their own.
          const angle = ((hashOf(a + " " + b) % 360) * Math.PI) / 180;
          [dx, dy, distance] = [Math.cos(angle), Math.sin(angle), 1];
        }
        const k = want(a, b);
        let force = (k * k) / distance;
        if (cableSet.has(a < b ? `${a} ${b}` : `${b} ${a}`)) force -= (distance * distance) / k;
        const [fx, fy] = [(dx / distance) * force, (dy / distance) * force];
        push.get(a).x += fx;
        push.get(a).y += fy;
        push.get(b).x -= fx;
        push.get(b).y -= fy;
      }
    }
    for (const id of free) {
      const p = at.get(id);
      // A weak pull to the middle keeps switches without cables near the rest.
      const force = push.get(id);
      force.x -= p.x * 0.02;
      force.y -= p.y * 0.02;
      const length = Math.hypot(force.x, force.y);
      if (length > 0) {
        const move = Math.min(length, heat);
        p.x += (force.x / length) * move;
        p.y += (force.y / length) * move;
      }
    }
  }
  if (fixed.size === 0) levelled(at);
  for (let round = 0; round < 50; round += 1) {
    let moved = false;
    for (let i = 0; i < ids.length; i += 1) {
      for (let j = i + 1; j < ids.length; j += 1) {
        const [a, b] = [ids[i], ids[j]];
        const [pa, pb] = [at.get(a), at.get(b)];
        const distance = Math.hypot(pa.x - pb.x, pa.y - pb.y) || 0.01;
        const short = want(a, b) - distance;
        if (short <= 0 || (fixed.has(a) && fixed.has(b))) continue;
        const [ux, uy] = [(pa.x - pb.x) / distance, (pa.y - pb.y) / distance];
        const share = fixed.has(a) || fixed.has(b) ? 1 : 0.5;
        if (!fixed.has(a)) [pa.x, pa.y] = [pa.x + ux * short * share, pa.y + uy * short * share];
        if (!fixed.has(b)) [pb.x, pb.y] = [pb.x - ux * short * share, pb.y - uy * short * share];
        moved = true;
      }
    }
    if (!moved) break;
  }
  return at;
}

// Turns a layout made from scratch about its middle so that its longest extent lies
// across: screens are wider than tall.
function levelled(at) {
  const points = [...at.values()];
  const cx = points.reduce((sum, p) => sum + p.x, 0) / points.length;
  const cy = points.reduce((sum, p) => sum + p.y, 0) / points.length;
  let [xx, yy, xy] = [0, 0, 0];
  for (const p of points) {
    xx += (p.x - cx) ** 2;
    yy += (p.y - cy) ** 2;
    xy += (p.x - cx) * (p.y - cy);
  }
  const turn = -0.5 * Math.atan2(2 * xy, xx - yy);
  const [cos, sin] = [Math.cos(turn), Math.sin(turn)];
  for (const p of points) {
    const [x, y] = [p.x - cx, p.y - cy];
    [p.x, p.y] = [x * cos - y * sin, x * sin + y * cos];
  }
}

// The direction a switch's hosts go: away from its cabled neighbours, else away from the
// middle of all switches, else down.
export function outwardOf(id, at, neighbours) {
  const p = at.get(id);
  const towards = (points) => {
    if (points.length === 0) return null;
    const cx = points.reduce((sum, q) => sum + q.x, 0) / points.length;
    const cy = points.reduce((sum, q) => sum + q.y, 0) / points.length;
    return Math.hypot(p.x - cx, p.y - cy) > 1 ? Math.atan2(p.y - cy, p.x - cx) : null;
  };
  const near = (neighbours.get(id) || []).map((other) => at.get(other)).filter(Boolean);
  const away = towards(near) ?? towards([...at.values()]);
  return away ?? Math.PI / 2;
}

// Places the new hosts of one switch at `centre`: `macs` sorted, `taken` the positions of
// its hosts that stay. Each new host takes the best slot no staying host is near.
export function placeHosts(centre, outward, macs, taken) {
  const placed = new Map();
  const occupied = [...taken];
  const source = slots(outward);
  for (const mac of macs) {
    for (;;) {
      const slot = source.next().value;
      const point = { x: centre.x + slot.x, y: centre.y + slot.y };
      if (occupied.every((q) => Math.hypot(q.x - point.x, q.y - point.y) >= HOST_SPACING * 0.75)) {
        placed.set(mac, point);
        occupied.push(point);
        break;
      }
    }
  }
  return placed;
}
