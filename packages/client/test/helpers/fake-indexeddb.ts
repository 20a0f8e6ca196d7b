// Just enough of IDBFactory for indexedDbKeyStore and browserStorage's stamps: databases by name,
// object stores keyed out of line, requests answered asynchronously through onsuccess / onerror,
// transactions completing (oncomplete) once their requests have, values kept by reference (a
// CryptoKey survives structured clone in browsers; here it is simply the same object).

type Handler = (() => void) | null;

class FakeRequest<T> {
  result!: T;
  error: DOMException | null = null;
  onsuccess: Handler = null;
  onerror: Handler = null;
  onupgradeneeded: Handler = null;
  settle(run: () => T) {
    queueMicrotask(() => {
      try {
        this.result = run();
        this.onsuccess?.();
      } catch (error) {
        this.error = error as DOMException;
        this.onerror?.();
      }
    });
    return this;
  }
}

class FakeStore {
  constructor(private readonly data: Map<IDBValidKey, unknown>) {}
  get(key: IDBValidKey) {
    return new FakeRequest<unknown>().settle(() => this.data.get(key));
  }
  add(value: unknown, key: IDBValidKey) {
    return new FakeRequest<IDBValidKey>().settle(() => {
      if (this.data.has(key)) throw new DOMException('key exists', 'ConstraintError');
      this.data.set(key, value);
      return key;
    });
  }
  put(value: unknown, key: IDBValidKey) {
    return new FakeRequest<IDBValidKey>().settle(() => {
      this.data.set(key, value);
      return key;
    });
  }
  delete(key: IDBValidKey) {
    return new FakeRequest<undefined>().settle(() => {
      this.data.delete(key);
      return undefined;
    });
  }
}

function fakeDatabase() {
  const stores = new Map<string, Map<IDBValidKey, unknown>>();
  const db = {
    stores,
    createObjectStore(name: string) {
      stores.set(name, new Map());
    },
    transaction(name: string) {
      const data = stores.get(name);
      if (!data) throw new DOMException(`no store ${name}`, 'NotFoundError');
      const transaction = {
        oncomplete: null as Handler,
        onabort: null as Handler,
        error: null,
        objectStore: () => new FakeStore(data),
      };
      // Every request settles in a microtask; the transaction completes on the next macrotask.
      setTimeout(() => transaction.oncomplete?.(), 0);
      return transaction;
    },
  };
  return db;
}

export function fakeIndexedDb(): IDBFactory & { opened: number } {
  const databases = new Map<string, ReturnType<typeof fakeDatabase>>();
  const factory = {
    opened: 0,
    open(name: string) {
      factory.opened++;
      let db = databases.get(name);
      if (!db) {
        db = fakeDatabase();
        databases.set(name, db);
      }
      const { stores } = db;
      const request = new FakeRequest<typeof db>();
      request.result = db;
      queueMicrotask(() => {
        if (stores.size === 0) request.onupgradeneeded?.();
        request.onsuccess?.();
      });
      return request;
    },
  };
  return factory as unknown as IDBFactory & { opened: number };
}
