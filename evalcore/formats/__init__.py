"""How records are written out: a record's JSON shape declared on the record (`shapes`), and the one CSV writer with
spreadsheet-safe cells (`csvcells`)."""
