"""What older versions wrote, brought to the current shape: the store's numbered schema migrations and stores from
before one row per document."""
