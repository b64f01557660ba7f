/** The part of Map and WeakMap that getOrInsertComputed uses. */
interface KeyedStore<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
}

/**
 * The value under `key`, made by `make(key)` and stored first when there is none (TC39's
 * Map.prototype.getOrInsertComputed). Nothing is stored when `make` throws.
 */
export function getOrInsertComputed<K, V>(map: KeyedStore<K, V>, key: K, make: (key: K) => V): V {
  let v = map.get(key);
  if (v === undefined) {
    v = make(key);
    map.set(key, v);
  }
  return v;
}
