import Gateway
// tunneld: the gateway daemon (filled by the gateway issue).
print("tunneld: not yet implemented")
