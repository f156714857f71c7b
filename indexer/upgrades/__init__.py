"""What older versions wrote, brought to the current shape by one chain of numbered steps applied at the first write
(chain.py; the steps a store takes when it is opened are in store_steps.py): stores from before one row per document
(legacy_store.py), the tables every store now has (base_tables.py), format-1 vector files read as segments and
converted to them (format_one.py), and the store's numbered schema changes, a module each (segment_tables.py,
document_counters.py, build_settings_table.py, document_checksums.py, originals_table.py, template_table.py),
applied in order by migrations.py."""
