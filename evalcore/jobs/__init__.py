"""Long work other than campaigns as stored jobs workers claim (`job_queue`: `submit`, `JobWorkers` under caps per
process and tenant, a heartbeat lease, cancel, resume from the pieces kept)."""
