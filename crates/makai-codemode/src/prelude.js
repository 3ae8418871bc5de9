// The globals of a codemode script. `__host` holds the engine's functions;
// values cross between the script and the host as JSON text.
(() => {
  const host = globalThis.__host;
  delete globalThis.__host;
  const pending = new Map();
  const EXIT = Object.freeze({ exit: true });

  const show = (value) => {
    if (typeof value === "string") return value;
    if (value instanceof Error) return `${value.name}: ${value.message}`;
    try {
      const json = JSON.stringify(value, null, 2);
      return json === undefined ? String(value) : json;
    } catch (e) {
      return String(value);
    }
  };
  const errorText = (e) => {
    if (e instanceof Error) {
      const head = `${e.name}: ${e.message}`;
      return e.stack ? `${head}\n${e.stack}`.trimEnd() : head;
    }
    return `Uncaught ${show(e)}`;
  };
  const call = (kind, name, args) =>
    new Promise((resolve, reject) => {
      let json;
      try {
        json = JSON.stringify(args === undefined ? {} : args);
      } catch (e) {
        reject(e);
        return;
      }
      const id = host.call(kind, name, json === undefined ? "{}" : json);
      pending.set(id, { resolve, reject });
    });

  Object.defineProperty(globalThis, "__settle", {
    value: (id, ok, json) => {
      const p = pending.get(id);
      if (!p) return;
      pending.delete(id);
      if (ok) p.resolve(json === undefined ? undefined : JSON.parse(json));
      else p.reject(new Error(json));
    },
  });

  globalThis.tools = new Proxy(
    {},
    {
      get(_, key) {
        if (typeof key !== "string") return undefined;
        const real = host.resolve(key);
        if (real === undefined) return undefined;
        return (args) => call("tool", real, args);
      },
      has(_, key) {
        return typeof key === "string" && host.resolve(key) !== undefined;
      },
      ownKeys() {
        return JSON.parse(host.names());
      },
      getOwnPropertyDescriptor(_, key) {
        if (typeof key !== "string") return undefined;
        const real = host.resolve(key);
        if (real === undefined) return undefined;
        return {
          value: (args) => call("tool", real, args),
          enumerable: true,
          configurable: true,
          writable: false,
        };
      },
    },
  );

  globalThis.text = (value) => {
    host.text(show(value));
  };
  globalThis.image = (value) => {
    host.image(JSON.stringify(value === undefined ? null : value));
  };
  const log = (level) => (...args) => {
    host.console(level, args.map(show).join(" "));
  };
  globalThis.console = Object.freeze({
    log: log("log"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    debug: log("debug"),
  });
  globalThis.exit = () => {
    throw EXIT;
  };
  globalThis.store = (key, value) => {
    if (typeof key !== "string") throw new TypeError("store() takes a string key");
    let json;
    if (value !== undefined) {
      json = JSON.stringify(value);
      if (json === undefined) throw new TypeError("store() takes a JSON-serializable value");
    }
    host.store(key, json);
  };
  globalThis.load = (key) => {
    const json = host.load(String(key));
    return json === undefined ? undefined : JSON.parse(json);
  };
  globalThis.ALL_TOOLS = Object.freeze(JSON.parse(host.allTools()));
  globalThis.searchTools = async (query, options) =>
    JSON.parse(
      host.search(
        String(query ?? ""),
        Number(options?.limit ?? 8),
        options?.namespace === undefined ? undefined : String(options.namespace),
      ),
    );
  globalThis.describeTool = async (name) => {
    const json = host.describe(String(name));
    return json === undefined ? undefined : JSON.parse(json);
  };
  globalThis.describeNamespace = async (name) => {
    const json = host.describeNamespace(String(name));
    return json === undefined ? undefined : JSON.parse(json);
  };
  const model = (method) => (...args) => call("models", method, args);
  globalThis.models = Object.freeze({
    getModelsOfType: model("getModelsOfType"),
    getAvailableOfType: model("getAvailableOfType"),
    getModelOfType: model("getModelOfType"),
    classify: model("classify"),
    generateImages: model("generateImages"),
  });

  Object.defineProperty(globalThis, "__run", {
    value: (main) =>
      main().then(
        (value) => {
          if (value !== undefined) host.text(show(value));
          host.done(true, undefined);
        },
        (e) => {
          if (e === EXIT) host.done(true, undefined);
          else host.done(false, errorText(e));
        },
      ),
  });
})();
