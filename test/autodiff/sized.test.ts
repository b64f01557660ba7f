// verify_grad rows for the sized ops (src/ir/ops/sized.ts): sizes from int vectors, resolved per
// specialisation. Built with `apply` so that the sizes stay inputs (the K functions would give
// static ops for verify_grad's static placeholders); the size vectors are constants here.
import { apply } from '../../src/ir/build.js';
import { NDArray } from '../../src/ir/ndarray.js';
import type { Node } from '../../src/ir/node.js';
import { constantNode } from '../../src/api/args.js';
import { gradTable } from '../helpers/gradtable.js';
import { grid } from '../helpers/values.js';

const vec = (v: number[]) => constantNode(new NDArray(v, [v.length], 'int32'));
const unknown = (n: number) => new Array<null>(n).fill(null);

gradTable('gradients: sized ops', [
  { name: 'reshape_dims (3, -1)', inputs: [grid([2, 3], 1)], build: (x: Node) => apply('reshape_dims', [x, vec([3, -1])], { known: unknown(2) }) },
  { name: 'tile_dims (2, 1)', inputs: [grid([2, 3], 2)], build: (x: Node) => apply('tile_dims', [x, vec([2, 1])], { known: unknown(2) }) },
  { name: 'slice_dims start (1, 1) size (-1, 2)', inputs: [grid([3, 4], 3)], build: (x: Node) => apply('slice_dims', [x, vec([1, 1]), vec([-1, 2])], { start: unknown(2), size: unknown(2) }) },
  {
    name: 'untile_dims (2, 1)', inputs: [grid([4, 3], 4), grid([2, 3], 5)],
    build: (g: Node, x: Node) => apply('untile_dims', [g, vec([2, 1]), x], { known: [] }),
  },
  {
    name: 'unslice_dims start (1, 1) size (-1, 2)', inputs: [grid([2, 2], 6), grid([3, 4], 7)],
    build: (g: Node, x: Node) => apply('unslice_dims', [g, x, vec([1, 1]), vec([-1, 2])], { start: unknown(2), size: unknown(2) }),
  },
]);
