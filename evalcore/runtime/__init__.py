"""How the process loads and frees what it uses: a package's exports imported on first use and values built once
(`lazy`), memory given back after a large piece of work (`memory`), daemon threads for calls to other machines
(`threads`), the C inner loops built with the package or on first use (`compiled`)."""
