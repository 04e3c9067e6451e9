#!/bin/sh
# One relayed connection (socat runs this per connection accepted on the host's loopback):
# stdin/stdout to ADDRESS:PORT inside the cluster's network namespace.
#   relay.sh NETNS_PATH ADDRESS PORT
exec nsenter --net="$1" socat STDIO "TCP:$2:$3"
