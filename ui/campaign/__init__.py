"""The Campaigns page's sections, one module each: every function takes what it shows (the store, the principal, the
campaign) as arguments; `tables` computes the tables and texts they show, without drawing anything."""
