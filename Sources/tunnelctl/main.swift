import Policy
// tunnelctl: the admin CLI.
print("tunnelctl")
