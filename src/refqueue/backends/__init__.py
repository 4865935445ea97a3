"""Queue backends beyond the in-process ``refqueue.queue.SampleRefQueue``.

``refqueue.backends.redis``  ``RedisSampleRefQueue``: the queue's state in a
                             Redis 7 server, shared by many processes and
                             machines (extra ``redis``); ``make`` is its
                             conformance factory.
"""
