// GNU libidn2 (Debian libidn2-dev): IDNA2008 / UTS #46 conversion of host names in rules to
// their ASCII (punycode, RFC 3492) form.
#include <idn2.h>
