/* TensorBoard event files, written without TensorFlow: one file per run directory named the way
 * TensorBoard finds it (events.out.tfevents.<seconds>.<host>.<pid>), each record in TFRecord
 * framing (the length, its masked CRC-32C, the record, the record's masked CRC-32C) holding an
 * Event protocol buffer: a first one with file_version "brain.Event:2", then scalar summaries.
 * Records are written whole and flushed per logging step (ex_tb_flush): TensorBoard stops reading
 * a file at a damaged record, so nothing is ever patched in place; a resumed run adds a new file.
 * Errors are printed through gpt2_fail (util.h). */
#ifndef COMMON_TB_EVENTS_H
#define COMMON_TB_EVENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ex_tb ex_tb;

/* A new event file in the directory dir (which exists: ex_out_dir); 0, or -1. */
int ex_tb_open(const char *dir, ex_tb **out);
/* One scalar (tag, e.g. "train/loss") at step, stamped with the current time; 0 or -1. */
int ex_tb_scalar(ex_tb *t, const char *tag, int64_t step, double value);
/* Pushes the records written so far to the file; 0 or -1. */
int ex_tb_flush(ex_tb *t);
/* The event file's path (for messages). */
const char *ex_tb_path(const ex_tb *t);
/* Flushes and closes; NULL is a no-op. */
void ex_tb_close(ex_tb *t);

/* CRC-32C (Castagnoli, as TFRecord uses) of n bytes. */
uint32_t ex_crc32c(const void *p, size_t n);

#endif
