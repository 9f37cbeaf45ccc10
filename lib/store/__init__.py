"""The store, moved to lib/store/core.py (split by subject in the next commit)."""
from lib.store.core import (CONNECT_CONFIG, HUMAN_PREFIX, VERDICT_ORDER_TERMS, Store, check_verdict, check_verdict_key,
                            current_verdicts_sql, default_data_path, default_db_path, default_store, frame, insert_rows,
                            insert_verdicts, is_lake, lake_schema, migrate, parse_lake, refresh_human_scores,
                            refresh_item_scores, verdict_item_problems)

__all__ = ["CONNECT_CONFIG", "HUMAN_PREFIX", "VERDICT_ORDER_TERMS", "Store", "check_verdict", "check_verdict_key",
           "current_verdicts_sql", "default_data_path", "default_db_path", "default_store", "frame", "insert_rows",
           "insert_verdicts", "is_lake", "lake_schema", "migrate", "parse_lake", "refresh_human_scores",
           "refresh_item_scores", "verdict_item_problems"]
