"""Security settings and rules: fail-closed settings, login throttling, CSP, admin rights by role."""
