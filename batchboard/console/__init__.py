"""The operator console: confirmation dialogs and results of operator actions."""
