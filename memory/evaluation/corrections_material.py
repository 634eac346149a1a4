"""The phrasing of the corrections set (corrections.py): the kinds of fact a work or an assistant
session states and later corrects, and the many ways people, agents and tools say a fact, use it,
change it or confirm it unchanged. Standard library only; plain data.

A topic is a block "== name kind" and lines "key: alternative | alternative | …". Keys: `subj` (the
fact as a noun phrase, for the shared phrasings below), `ask` (the question), `user`, `agent` (the
fact said by the person or by the agent, one turn), `tool` (a script that says it in a tool's
output), `use` (a script that mentions or uses the fact again, the stale value), `change` (the
fact's own ways of saying it changed, none with "correction", "actually" or "I meant") and `report`
(a script in which a tool's output says it changed). A script's turns are joined by " >> ", each
"u:" (the person), "b:" (the agent) or "t:NAME:" (tool NAME); "¶" is a new line in a turn. Slots:
{thing} (what the fact is about), {old}, {new} (its values), {alt} (a value nobody chose), {mate}
and {mate2} (people), and the topic's own.
"""

from __future__ import annotations

# Work sessions' subjects (each used once a session, and only when the filler never names it).
FEATURES = (
    "billing refactor|audit-log export|SSO rollout|search reindex|tenant split|onboarding revamp|"
    "usage metering|invoice PDF redesign|offline sync|feature-flag cleanup|GDPR erasure job|"
    "multi-region failover|rate-card migration|dark-mode launch|webhook retry rework"
).split("|")
SERVICES = (
    "admin console|metrics exporter|debug proxy|internal gRPC gateway|webhook relay|feature-flag service|"
    "docs preview server|auth sidecar|job dashboard"
).split("|")
LIBS = "protobuf|urllib3|grpcio|cryptography|orjson|tenacity|jinja2|boto3|sentry-sdk|uvicorn|lxml".split("|")
HOST_ROLES = [("Postgres primary", "pg"), ("Redis cache", "redis"), ("build runner", "runner")]
HOST_ROLES += [("bastion", "bastion"), ("Kafka broker", "kafka"), ("object-store gateway", "s3gw")]
# (limit, unit, values)
LIMITS = (
    ("upload size limit", "MB", (10, 25, 50, 100, 200)),
    ("page size cap on the list endpoints", "items", (50, 100, 200, 250, 500)),
    ("per-tenant rate limit", "requests per minute", (300, 600, 1200, 2400)),
    ("batch size for the backfill", "rows", (500, 1000, 2000, 5000, 10000)),
    ("database connection pool", "connections", (10, 20, 30, 40, 60)),
)
MEETINGS = (
    "sprint demo|architecture review|team retro|incident review|security review|launch go/no-go meeting|"
    "quarterly planning session"
).split("|")
BUDGETS = (
    "monthly cloud budget|GPU budget for the next training run|contractor budget for the quarter|"
    "load-testing budget|observability budget"
).split("|")
CHANNELS = "eng|releases|team-dev|ops|backend|announcements".split("|")
# Assistant sessions' subjects.
PETS = "Biscuit|Pepper|Miso|Otis|Juniper|Rolo|Mabel".split("|")
VENUE_EVENTS = (
    "{friend}'s leaving drinks|{sibling}'s engagement party|the book club dinner|{friend}'s fortieth|"
    "the neighbours' street party meeting"
).split("|")
GUEST_EVENTS = (
    "{kid}'s birthday party|Sunday lunch for {mother}'s birthday|the garden party|our housewarming|"
    "the christening lunch"
).split("|")
# (appointment, who writes about it)
APPOINTMENTS = (
    ("{pet}'s vet appointment", "Parkside Vets"),
    ("the car's MOT", "Hillcrest Garage"),
    ("the haircut", "Studio Nine"),
    ("the boiler service", "Warmhome Heating"),
    ("the piano tuner's visit", "Keys & Strings"),
    ("the dental check-up", "Bridge Street Dental"),
)
JOBS = (
    ("new kitchen worktop", "Hartley Joinery"),
    ("garden fence", "Greenway Fencing"),
    ("bathroom retiling", "Tiled & True"),
    ("roof repair", "Summit Roofing"),
    ("van hire for the move", "Ace Van Hire"),
    ("loft insulation", "Cosy Lofts"),
)
VENUES = (
    "The Anchor, 3 Mill Lane|the back room of The Crown, 41 Kestrel Drive|12 Orchard Mews|"
    "the Old Boathouse, 7 Quay Street|Flat 4, 88 Beacon Street|the function room at 19 Chapel Lane|"
    "27 Sorrel Place|The Lamplighter, 2 Hollis Way"
).split("|")
DIGITS = "One|Two|Three|Four|Five".split("|")

TOPICS = """
== deadline work
subj: the deadline for the {thing} | the {thing}'s due date
ask: When is the {thing} due now? | By what date does the {thing} have to be done? | What is the current deadline for the {thing}?
user: The deadline for the {thing} is {old}. | {mate} wants the {thing} finished by {old}, so let's not gold-plate it. | We have until {old} for the {thing}; plan the tickets around that.
agent: Noted: the {thing} is due {old}. I'll plan the remaining work backwards from that. | From the planning doc, the {thing} is due on {old}; I've put that at the top of the task list.
tool: b:[email_search] {thing} deadline >> t:email:email.search(query='{thing} deadline') -> 2 results¶[1] {mate} · "{Thing} timeline" · 3h ago¶    Hi all, confirming the {thing} is due {old}. Please flag blockers early.¶[2] {mate2} · "Re: standup notes" · 1d ago¶    Notes attached, nothing urgent.
use: u:Remember the {thing} has to be in by {old}, so the clean-up can wait. | b:With the {thing} due {old}, I'd leave the test refactor for later. | u:Can you sketch a plan that gets the {thing} done before {old}? >> b:Plan: the API changes first, then the migration, then the docs.
change: They pushed the {thing} to {new}. | The {thing} slipped; it's due {new} now. | {mate} gave us until {new} for the {thing}. | We got more time on the {thing}: the new date is {new}.
report: b:[email_search] {thing} >> t:email:email.search(query='{thing}') -> 2 results¶[1] {mate} · "{Thing}: new date" · 2h ago¶    After today's planning we moved the {thing} to {new}. Release notes to follow.¶[2] {mate2} · "lunch?" · 5h ago¶    Anyone up for the Thai place? | t:slack:#{channel} · {mate} · 10:42¶  heads-up: the {thing} is now due {new}, product agreed this morning.¶#{channel} · {mate2} · 10:44¶  👍

== freeze work
subj: the start of the code freeze | the code freeze date | the day the code freeze begins
ask: When does the code freeze start? | From which day is merging frozen for the release? | What's the freeze date?
user: The code freeze for the release starts on {old}. | Heads-up: code freeze begins {old}, nothing but fixes after that.
agent: Noted, the freeze starts {old}; I'll make sure the branch is green before then.
tool: t:slack:#{channel} · {mate} · 09:02¶  release calendar: code freeze starts {old}, RC cut the same evening.¶#{channel} · {mate2} · 09:05¶  thanks
use: u:Freeze is {old}, so anything risky has to be merged before then. | b:Since the freeze starts {old}, I'll land the rename first and leave the cleanup.
change: Release management moved the freeze to {new}. | The freeze starts {new} now; they want more time for fixes. | Freeze is {new} from now on, not {old}.
report: t:slack:#{channel} · {mate} · 09:15¶  release update: code freeze now starts {new} (was {old}).¶#{channel} · {mate2} · 09:17¶  noted

== port work
subj: the {thing}'s port | the port the {thing} listens on | the {thing} port
ask: Which port does the {thing} listen on? | What port do I hit for the {thing}? | On which port is the {thing} served?
user: The {thing} listens on {old}; it's behind the VPN. | Run the {thing} on port {old}, that's what the load balancer expects.
agent: I've set the {thing} to listen on {old} in docker-compose.yml. | The {thing} is up on port {old}; the health check passes.
tool: b:[read_file config/services.yaml] >> t:read_file:# config/services.yaml¶{slug}:¶  image: {project}/{slug}:latest¶  port: {old}¶  replicas: 2¶  healthcheck: /healthz¶metrics:¶  port: 9102
use: b:curl localhost:{old}/healthz on the {thing} returns 200. | u:Open the {thing} on {old} and check the new page loads.
change: Scratch the {old} idea, the {thing} is on {new}. | The {thing} moved to port {new}; {old} clashed with the sidecar. | Ops took {old} for the proxy, so the {thing} listens on {new} now. | We're putting the {thing} on {new} instead.
report: b:[bash] git log -3 --oneline -- config/services.yaml >> t:bash:{sha} {slug}: listen on {new} instead of {old} ({mate})¶{sha2} bump replicas for the workers¶{sha3} add healthcheck paths

== pin work
subj: the {thing} pin | the pinned {thing} version | the version of {thing} we pin
ask: Which version of {thing} are we pinned to? | What {thing} version does the project use? | What is {thing} pinned at in the lock file?
user: Pin {thing} to {old}, the newer ones changed the API. | Keep {thing} at {old} for now, please.
agent: I've pinned {thing}=={old} in the requirements; the tests pass with it.
tool: b:[bash] grep -n {thing} requirements.txt >> t:bash:requirements.txt:14:{thing}=={old}
use: b:The failing import comes from {thing} {old}; the docs for that version still describe the old call. | u:Don't let the bot upgrade {thing} past {old}.
change: We're bumping {thing} to {new}; {old} has the CVE. | Pin {thing} to {new}, {old} breaks the build on ARM. | {Thing} goes to {new} in the lock file. | Security wants {thing} on {new}; {old} is on their list.
report: t:ci:Dependabot · PR #{pr} merged by {mate}: bump {thing} from {old} to {new}¶  requirements.txt  1 +-¶  checks: 14 passed

== reviewer work
subj: the reviewer for the {thing} PR | the {thing} PR's reviewer
ask: Who is reviewing the {thing} PR? | Whose approval does the {thing} change need? | Who should look over the {thing} pull request?
user: {old} will review the {thing} PR; ping them when it's green. | Send the {thing} PR to {old} for review.
agent: I've requested a review from {old} on the {thing} PR.
tool: t:github:PR #{pr} "{Thing}" · review requested: {old} · checks pending
use: b:The {thing} PR is waiting on {old}; all checks are green. | u:Did {old} leave any comments on the {thing} PR yet?
change: {new} is taking over the {thing} review; {old} is off this week. | Send the {thing} PR to {new} instead, {old} is swamped. | {old} handed the {thing} review to {new}. | {new} reviews the {thing} PR now.
report: t:github:PR #{pr} "{Thing}" · review request removed: {old} · review requested: {new} (by {mate})

== host work
subj: the {thing} host | the hostname of the {thing} | the machine the {thing} runs on
ask: What's the hostname of the {thing}? | Which machine is the {thing} on? | Where does the {thing} live now?
user: The {thing} is {old}; you'll need the VPN. | Use {old} for the {thing}.
agent: The {thing} resolves to {old}; I've put that in .env.example.
tool: b:[bash] grep -n {slug} deploy/inventory.ini >> t:bash:deploy/inventory.ini:7:{old} ansible_user=deploy  # {thing}
use: b:Connecting to {old} for the {thing} timed out once, then worked. | u:Check the disk on {old} while you're in there.
change: The {thing} moved to {new}; {old} is being decommissioned. | Point everything at {new} for the {thing}, {old} is gone after the migration. | {old} is retired, the {thing} lives on {new} now.
report: t:slack:#{channel} · {mate} · 16:03¶  {thing} failover done, new host is {new}. {old} goes away on Friday.

== limit work
subj: the {thing} | the current {thing}
ask: What is the {thing} set to? | What's the {thing} now? | What value does the {thing} have?
user: The {thing} is {old}; don't go above it without asking. | Set the {thing} to {old}.
agent: I've set the {thing} to {old} in the settings.
tool: b:[bash] grep -rn LIMIT app/settings.py >> t:bash:app/settings.py:41:# {thing}: {old}
use: b:The failing job hit the {thing} of {old}; that's the error we saw. | u:With the {thing} at {old}, the big customer's import won't go through.
change: We're {moving} the {thing} to {new}. | {mate} {moved} the {thing} to {new} after the load test. | The {thing} is {new} from today. | Make the {thing} {new}; {old} was wrong for the enterprise plan.
report: b:[bash] git show --stat HEAD >> t:bash:commit {sha}¶Author: {mate}¶    settings: {thing} {old} -> {new}¶ app/settings.py  2 +-

== branch work
subj: the branch for the {thing} | the {thing} branch
ask: Which branch is the {thing} work on? | What branch should I push the {thing} changes to? | Where does the {thing} code live in git?
user: Put the {thing} work on {old}. | The {thing} branch is {old}; open the PR from there.
agent: I've created {old} for the {thing} and pushed the first commit.
tool: b:[bash] git branch --show-current >> t:bash:{old}
use: b:Pushed two more commits to {old} for the {thing}. | u:Rebase {old} on main before you push again.
change: Rebased everything onto {new}; stop pushing to {old}. | The {thing} work lives on {new} now, {old} is frozen. | Use {new} for the {thing} instead of {old}.
report: b:[bash] git branch -vv >> t:bash:* main  {sha} merge #{pr}¶  {new}  {sha2} [origin/{new}] {thing}: squashed, continue here ({mate})¶  {old}  {sha3} [origin/{old}: gone] wip

== meeting work
subj: the {thing} | the slot for the {thing} | the {thing}'s time
ask: When is the {thing}? | What day and time is the {thing} now? | When do we meet for the {thing}?
user: The {thing} is {old}; can you have the notes ready? | {mate} booked the {thing} for {old}.
agent: I've noted the {thing} for {old} and will have the summary ready before it.
tool: t:calendar:calendar.event("{Thing}") -> {old} · organiser {mate} · room Blue 2 · 6 attendees
use: u:Before the {thing} on {old}, I want the numbers in the doc. | b:I'll have the slides ready for {old}.
change: The {thing} moved to {new}. | {mate} shifted the {thing} to {new}; {old} clashed with the all-hands. | We're doing the {thing} {new} instead. | Not {old} — {new} for the {thing}.
report: t:calendar:calendar.updated("{Thing}") -> now {new} (was {old}) · organiser {mate} · room Blue 2

== budget work
subj: the {thing} | our {thing}
ask: How much do we have for the {thing}? | What is the {thing} now? | How big is the {thing}?
user: The {thing} is {old}; keep the experiments inside that. | Finance gave us {old} for the {thing}.
agent: Noted, the {thing} is {old}; the current run rate fits inside it.
tool: t:email:email.search(query='budget') -> 1 result¶[1] {mate} · "Budget" · 1d ago¶    The {thing} is {old}, as agreed in planning.
use: b:At this rate we'd use about two thirds of the {old} for the {thing}. | u:Keep an eye on spend, {old} for the {thing} isn't much.
change: Finance {moved} the {thing} to {new}. | The {thing} is {new} from this month. | We got {new} for the {thing} in the end.
report: t:email:email.search(query='budget') -> 1 result¶[1] {mate} · "Budget update" · 1h ago¶    The {thing} has been {moved} to {new} for the rest of the quarter.

== flight assistant
subj: my flight to {city} | the departure time of {flight} | {flight}'s departure time
ask: What time does my flight to {city} leave? | When does {flight} take off? | What's the departure time for the {city} flight?
user: I'm on {flight} to {city} on {day}, leaving at {old}. | My {city} flight is {flight}, departing {old} on {day}.
agent: Booked: {airline} {flight} to {city} on {day}, departing {old}. | I've put your {city} flight in the calendar: {flight}, {day} at {old}.
tool: u:Book the {airline} flight to {city} on {day}. >> t:bookings:bookings.confirm -> CONFIRMED flight {flight} {home} to {city}¶Reference: {ref}¶  {day}, departs {old}¶  Seat 14C, 1 bag included
use: b:For {flight} at {old} you should leave the house about two and a half hours before. | u:Tell {partner} my {city} flight leaves at {old} so the pick-up is sorted.
change: The airline moved {flight} to {new}. | My {city} flight now leaves at {new}. | {flight} got rescheduled: departure {new} instead of {old}.
report: b:Checking your inbox. >> t:email_search:email_search(query='{flight}') -> 2 results¶[1] {airline} · "Schedule change: {flight}" · 2h ago¶    Your flight {flight} to {city} on {day} now departs at {new} (previously {old}). No action is needed.¶[2] {partner} · "dinner?" · 1d ago¶    Are we still on for Friday?

== table assistant
subj: our table at {thing} | the booking at {thing}
ask: What time is the table at {thing}? | When do we need to be at {thing} on {day}? | What time is our reservation at {thing}?
user: We've got a table at {thing} on {day} at {old}. | Booked {thing} for {day}, {old}, four of us.
agent: Done: a table for four at {thing}, {day} at {old}.
tool: u:Book {thing} for {day} evening. >> t:bookings:bookings.confirm -> CONFIRMED table at {thing}¶Reference: {ref}¶  4 guests¶  {day} {old}¶Free changes until 24 hours before.
use: b:I've told {partner} the table at {thing} is at {old}. | u:Remind me on {day} that we're at {thing} at {old}.
change: {Thing} moved our table to {new}. | The table at {thing} is {new} now; they have a private party earlier. | {Thing} could only keep the table at {new}, so that's the booking.
report: t:email_search:email_search(query='{thing}') -> 1 result¶[1] {thing} · "Your reservation" · 3h ago¶    We're sorry, we had to move your table on {day} to {new}. We look forward to seeing you. | t:bookings:bookings.status(ref={ref}) -> AMENDED table at {thing}¶  {day} {new} (was {old})¶  4 guests

== gate assistant
subj: the gate for {flight} | {flight}'s gate | the boarding gate for the {city} flight
ask: Which gate does {flight} board from? | Where do I board for {city}? | What gate is the {city} flight at?
user: The check-in email says {flight} boards from gate {old}. | {flight} to {city} is at gate {old}.
agent: Your boarding pass for {flight} to {city} shows gate {old}, boarding 40 minutes before departure.
tool: t:email_search:email_search(query='{flight} boarding pass') -> 1 result¶[1] {airline} · "Boarding pass {flight}" · 5h ago¶    {flight} to {city}, {day}. Gate {old}. Boarding closes 20 minutes before departure.
use: u:Gate {old} is miles from security, so I'll go straight through. | b:From security to gate {old} is about a 12-minute walk.
change: {flight} moved to gate {new}. | Gate change for {flight}: it's {new} now. | The board says gate {new} for {city}.
report: t:flight_status:flight_status({flight}) -> {airline} {flight} to {city}¶  status: on time¶  gate: {new} (changed from {old})¶  boarding: 40 min before departure

== venue assistant
subj: the address for {thing} | the venue for {thing}
ask: Where is {thing}? | What's the address for {thing}? | Where do I need to go for {thing}?
user: {Thing} is at {old}. | The address for {thing} is {old}, upstairs.
agent: I've saved the address for {thing}: {old}.
tool: t:email_search:email_search(query='invite') -> 1 result¶[1] {mate} · "Invite" · 2d ago¶    Come along to {thing} at {old}, from 7. Bring a bottle!
use: u:How long does it take to get to {old}? >> b:About twenty minutes by bus. | b:I've added {old} to the calendar entry for {thing}.
change: {Thing} moved to {new}. | The venue changed: {thing} is at {new} now. | They switched {thing} to {new}, the old place flooded.
report: t:email_search:email_search(query='{mate}') -> 1 result¶[1] {mate} · "Change of venue!" · 4h ago¶    We're now at {new} for {thing}. Same time, see you there.

== guests assistant
subj: the headcount for {thing} | the number of guests at {thing}
ask: How many people are coming to {thing}? | How many guests are we expecting at {thing}? | What's the headcount for {thing}?
user: We're expecting {old} at {thing}. | {Thing}: {old}, including us.
agent: Noted, {old} for {thing}; I'll size the food order on that.
tool: t:notes:notes.open(title='{thing}') last edited 2 days ago:¶- guests: {old}¶- cake from the bakery¶- borrow chairs from next door
use: b:The caterer's minimum is fine for {old}. | u:Order enough plates and cups for {old} at {thing}.
change: {diff} more said yes, so it's {new} for {thing}. | We're {new} for {thing} now. | Headcount for {thing} went up to {new}.
report: t:email_search:email_search(query='RSVP {thing}') -> 1 result¶[1] {mate} · "Re: RSVPs" · 6h ago¶    Final numbers for {thing}: {new}. Everyone else has replied no.

== appointment assistant
subj: {thing} | the day of {thing}
ask: Which day is {thing}? | What day is {thing} now? | On which day is {thing}?
user: {Thing} is on {old}. | Booked {thing} for {old} morning.
agent: I've booked {thing} for {old} at 9:30.
tool: t:calendar:calendar.event("{Thing}") -> {old} 09:30-10:00 · {firm}
use: u:Keep {old} morning clear for {thing}. | b:{Thing} on {old} doesn't clash with anything.
change: Not {old} — {new}, for {thing}. | {Thing} moved to {new}. | {firm} rang: {thing} is on {new} now.
report: t:email_search:email_search(query='{firm}') -> 1 result¶[1] {firm} · "Appointment" · 1h ago¶    We've had to move your booking ({thing}) to {new}, same time. Reply if that doesn't suit.

== quote assistant
subj: the quote for the {thing} | the price {firm} gave for the {thing}
ask: How much is {firm} charging for the {thing}? | What will the {thing} cost? | What's the current quote for the {thing}?
user: {firm} quoted {old} for the {thing}. | The {thing} comes to {old} from {firm}.
agent: {firm}'s quote for the {thing} is {old}, VAT included.
tool: t:email_search:email_search(query='{firm} quote') -> 1 result¶[1] {firm} · "Quote" · 2d ago¶    Our price for the {thing} is {old}, including materials and labour.
use: u:Set aside {old} for the {thing}. | b:With the {thing} at {old}, this month's budget is tight.
change: {firm}'s price for the {thing} {moved} to {new}. | {firm} sent a new quote for the {thing}: {new}. | The {thing} is {new} now.
report: t:email_search:email_search(query='{firm}') -> 1 result¶[1] {firm} · "Revised quote" · 3h ago¶    Please find our revised price for the {thing}: {new}, including materials and labour.

== taxi assistant
subj: the airport taxi pick-up | the pick-up time for the airport taxi
ask: What time is the airport taxi picking me up? | When does the cab come on {day}? | What's the pick-up time for the airport run?
user: The taxi to the airport picks me up at {old} on {day}. | Airport taxi is booked for {old} on {day}.
agent: Airport taxi booked for {day}, pick-up {old} from {street}.
tool: t:bookings:bookings.confirm -> CONFIRMED taxi {street} to airport¶Reference: {ref}¶  {day}, pick-up {old}¶  Driver details sent 1 hour before.
use: u:Set an alarm half an hour before the {old} taxi. | b:With the taxi at {old}, there's no time for breakfast at home.
change: Moved the airport taxi to {new}; roadworks on the ring road. | The cab comes at {new} on {day} now. | Pick-up is {new} instead.
report: t:bookings:bookings.status(ref={ref}) -> AMENDED taxi {street} to airport¶  {day}, pick-up {new} (was {old})¶  Reason: operator schedule

== checkin assistant
subj: the check-in date at {thing} | my check-in date at {thing}
ask: Which day do I check in at {thing}? | When do I arrive at {thing} in {city}? | What's the check-in date for {thing}?
user: I check in at {thing} in {city} on {old}. | Booked {thing} from {old}, three nights.
agent: Your room at {thing} in {city} is booked from {old}.
tool: t:bookings:bookings.confirm -> CONFIRMED room at {thing}, {city}¶Reference: {ref}¶  Check-in {old}, 3 nights¶  Breakfast included
use: u:Tell {partner} I'm in {city} from {old}. | b:Your check-in on {old} is from 3 pm.
change: Moved my booking at {thing} to start {new}. | I'm arriving at {thing} on {new} now. | My booking at {thing} now starts {new}.
report: t:bookings:bookings.status(ref={ref}) -> AMENDED room at {thing}, {city}¶  Check-in {new} (was {old}), 3 nights
"""

# Shared phrasings ({subj}, {Subj} capitalised, {old}, {new}, {alt}, {mate}).
# The person corrects themselves, with the words "correction", "actually" or "I meant".
KEYWORD_SELF = (
    "Correction: {subj} is {new}, not {old}.|Actually, {subj} is {new}. I had it wrong before.|"
    "I meant {new}, not {old}, for {subj}. Sorry.|Small correction on {subj}: it's {new}.|"
    "Actually make that {new} for {subj}.|Correction to what I said the other day: {subj} is {new}."
).split("|")
# The person corrects themselves or passes a change on, without those words.
PLAIN_SELF = (
    "Change of plan: {subj} is {new}.|Not {old} — {new}. That's {subj}.|{Subj} is now {new}.|"
    "Update on {subj}: {new}.|Heads-up, {subj} changed; it's {new} from now on.|"
    "Make that {new} for {subj}, not {old}.|Scratch {old} for {subj}, it's {new}."
).split("|")
# The person passes on what someone told them (before a change line).
RELAY = "Update from {mate}: |{mate} just messaged. |Heard from {mate} this morning. |Per {mate}: ".split("|")
# The agent had it wrong; the person puts it right.
KEYWORD_AGENT = (
    "Actually, you've got {subj} wrong: it's {new}, not {old}.|Correction: {subj} is {new}. Where did {old} come from?|"
    "That's not what I meant, {subj} is {new}.|Actually it's {new} for {subj}; you had {old}."
).split("|")
PLAIN_AGENT = (
    "No, {subj} is {new}, not {old}. Please fix your notes.|That's wrong: {subj} is {new}.|"
    "{Old}? No, it's {new} for {subj}.|You've got the old value for {subj}; it's {new}.|"
    "Where did {old} come from? {Subj} is {new}."
).split("|")
# A fact confirmed unchanged, some in a correction's words.
CONFIRM_KEYWORD = (
    "Just to confirm, {subj} is still {old}.|Actually, leave {subj} at {old}; that's right.|"
    "Correction, false alarm: {subj} stays {old}, nothing moved.|"
    "I meant to double-check {subj}: it's still {old}."
).split("|")
CONFIRM_PLAIN = (
    "Double-checked: {subj} stays {old}, nothing has changed.|No change on {subj}, it remains {old}.|"
    "{mate} asked if {subj} had moved to {alt}. It hasn't, still {old}.|Confirmed with {mate}: {subj} is {old} as planned."
).split("|")
CONFIRM_AGENT = (
    "I checked again: {subj} is still {old}.|Looked it up once more; {subj} hasn't changed, {old}.".split("|")
)
# The agent offers a change; the person turns it down.
PROPOSE = "Should I move {subj} to {alt}?|Do you want {subj} changed to {alt}?|Shall I switch {subj} to {alt}?".split(
    "|"
)
DECLINE = "No, keep it at {old}.|No, leave {subj} as {old}.|No, {old} is right, leave it.".split("|")
# The agent's answers that repeat no value.
ACK = (
    "Noted.|Got it, updated.|OK, I'll use that from now on.|Thanks, I've changed my notes.|Understood.".split(
        "|"
    )
)
SORRY = "Sorry, fixed.|My mistake, I've corrected it.|Thanks for catching that; updated everywhere.".split(
    "|"
)
REPORTED = (
    "That's a change from what we had; I've updated my notes.|That changes the plan, I've updated the calendar.|"
    "Noted the change."
).split("|")
KEYWORDS = ("correction", "actually", "i meant")
