"""Who may do what: who acts and what each may do (`principals`: `Principal`, `Action`, `Forbidden`, `LOCAL`, the
sign-in back-off), and the API keys and dashboard sessions that say which principal a request is (`api_keys`)."""
